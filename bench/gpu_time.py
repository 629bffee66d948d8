"""The CUDA path measured on a real GPU: every launch and the whole model timed with CUDA events, beside the paper
estimate of `bench/gpu_estimate.py`, and the same model on the machine's CPU.

    python bench/gpu_time.py [MODEL_DIR ...] [--runs 200] [--warmup 20] [--json OUT.json]

MODEL_DIR (default: bench/resnet and the corpus's two digits models, the MLP and the CNN) holds model.json,
params.bin, case.json and input_i32.bin.
For each model it compiles the `cuda` device, checks its heads against the reference interpreter (bytes), then:
- per launch: a CUDA event before every launch and one after the last, `--runs` runs after `--warmup`; the median
  of each launch's elapsed time, beside its estimate (`gpu_estimate.estimate`) and the ratio measured / estimate;
- whole: events around the launches alone (no copies, no events between launches), one by one and replayed as
  the runner's CUDA graph, and the wall time of `runner(data)` as a user calls it (the input's copy in, the
  graph, the heads' copies out), medians;
- the cpu device on this machine at 1 thread and at every core this process may use (medians of `--runs`).
It prints a table per model and writes every figure to `--json`. Needs a GPU, cuda-python and NVRTC.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time
from typing import Any

import numpy as np

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from gpu_estimate import LAUNCH_OVERHEAD_S, estimate, kernels_using_dp4a  # noqa: E402


def _events(driver: Any, n: int) -> list[Any]:
    out = []
    for _ in range(n):
        err, event = driver.cuEventCreate(0)
        assert int(err) == 0, err
        out.append(event)
    return out


def _elapsed_ms(driver: Any, start: Any, end: Any) -> float:
    elapsed = getattr(driver, "cuEventElapsedTime_v2", None) or driver.cuEventElapsedTime
    err, ms = elapsed(start, end)
    assert int(err) == 0, err
    return float(ms)


def time_model(model_dir: pathlib.Path, runs: int, warmup: int) -> dict[str, Any]:
    import cvmc
    from cvmc.codegen.cuda import emit_cuda
    from cvmc.codegen.cuda_launch import kernel_specs
    from cvmc.runtime.devices.cuda import compile_graph, launch_descriptions, lower_graph
    from cvmc.runtime.frontend.graph import load_graph

    model_json = (model_dir / "model.json").read_bytes()
    params = (model_dir / "params.bin").read_bytes()
    shape = json.loads((model_dir / "case.json").read_text())["input_shape"]
    data = np.fromfile(model_dir / "input_i32.bin", dtype="<i4").reshape(shape)
    graph = load_graph(model_json, params)
    runner = compile_graph(graph)
    reference = cvmc.load_model(model_json, params, device="reference")
    want = reference.run(data)
    got = runner(data)
    heads = [np.asarray(h).reshape(-1) for h in want]
    exact = len(got) == len(heads) and all(
        np.array_equal(np.asarray(g).reshape(-1).astype(np.int32), h.astype(np.int32)) for g, h in zip(got, heads))

    program, kernels, _ = lower_graph(graph)
    descriptions = launch_descriptions(program, kernel_specs(kernels), runner.device.multiprocessors)
    dp4a = kernels_using_dp4a(emit_cuda(kernels))
    device, driver = runner.device, runner.device.driver
    launches = runner.launches
    n = len(launches)

    def run_launches(events: list[Any] | None) -> None:
        for i, (function, grid, block, arguments) in enumerate(launches):
            if events is not None:
                driver.cuEventRecord(events[i], 0)
            device.launch(function, grid, block, arguments)
        if events is not None:
            driver.cuEventRecord(events[n], 0)

    runner(data)  # the input is on the device from here on
    per_launch: list[list[float]] = [[] for _ in range(n)]
    events = _events(driver, n + 1)
    for r in range(warmup + runs):
        run_launches(events)
        driver.cuEventSynchronize(events[n])
        if r >= warmup:
            for i in range(n):
                per_launch[i].append(_elapsed_ms(driver, events[i], events[i + 1]))
    whole: list[float] = []
    start, end = _events(driver, 2)
    for r in range(warmup + runs):
        driver.cuEventRecord(start, 0)
        run_launches(None)
        driver.cuEventRecord(end, 0)
        driver.cuEventSynchronize(end)
        if r >= warmup:
            whole.append(_elapsed_ms(driver, start, end))
    graph: list[float] = []
    for r in range(warmup + runs if runner.recorded is not None else 0):
        driver.cuEventRecord(start, 0)
        device.replay(runner.recorded)
        driver.cuEventRecord(end, 0)
        driver.cuEventSynchronize(end)
        if r >= warmup:
            graph.append(_elapsed_ms(driver, start, end))
    wall: list[float] = []
    for r in range(warmup + runs):
        t = time.perf_counter()
        runner(data)
        if r >= warmup:
            wall.append(1e3 * (time.perf_counter() - t))

    rows = []
    for i, d in enumerate(descriptions):
        e = estimate(d, d["kernel"] in dp4a)
        measured = statistics.median(per_launch[i])
        rows.append({"kernel": d["kernel"], "grid": d["grid"][0], "block": d["block"][0], "macs": d["macs"],
                     "dp4a": d["kernel"] in dp4a, "measured_us": 1e3 * measured, "estimate_us": 1e6 * e["time_s"],
                     "ratio": 1e3 * measured / (1e6 * e["time_s"]),
                     "bound": max(("compute", e["compute_s"]), ("loads", e["loads_s"]), ("memory", e["memory_s"]),
                                  key=lambda kv: kv[1])[0]})  # fmt: skip
    cpu = {}
    cores = len(os.sched_getaffinity(0))
    for threads in sorted({1, 2, cores}):
        model = cvmc.load_model(model_json, params, device="cpu", threads=threads)
        model.run(data)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            model.run(data)
            times.append(1e3 * (time.perf_counter() - t))
        cpu[str(threads)] = statistics.median(times)
    return {"model": str(model_dir), "device": device.name, "capability": list(device.capability),
            "exact": bool(exact), "launches": n, "macs": sum(d["macs"] for d in descriptions),
            "compile": runner.stats, "rows": rows,
            "events_whole_ms": statistics.median(whole),
            "events_graph_ms": statistics.median(graph) if graph else None,
            "events_sum_ms": sum(r["measured_us"] for r in rows) / 1e3,
            "wall_ms": statistics.median(wall), "wall_min_ms": min(wall),
            "estimate_ms": sum(r["estimate_us"] for r in rows) / 1e3,
            "estimate_overhead_ms": 1e3 * LAUNCH_OVERHEAD_S * n, "cpu_ms": cpu, "runs": runs}


def report(r: dict[str, Any]) -> str:
    lines = [f"## {r['model']} on {r['device']} (sm_{r['capability'][0]}{r['capability'][1]}): "
             f"{r['launches']} launches, {r['macs'] / 1e6:.1f} M multiply-adds, bit-exact: {r['exact']}",
             f"{'launch':<44} {'grid':>6} {'block':>5} {'MMAC':>7} {'dp4a':>4} {'meas. us':>9} {'est. us':>8} "
             f"{'x est':>6} {'bound':>7}"]  # fmt: skip
    for row in r["rows"]:
        flag = "  <-- over 3x" if row["ratio"] > 3 else ""
        lines.append(f"{row['kernel']:<44} {row['grid']:>6} {row['block']:>5} {row['macs'] / 1e6:>7.2f} "
                     f"{'y' if row['dp4a'] else '':>4} {row['measured_us']:>9.1f} {row['estimate_us']:>8.1f} "
                     f"{row['ratio']:>6.2f} {row['bound']:>7}{flag}")  # fmt: skip
    cpu = ", ".join(f"{t} thread(s) {ms:.3f} ms" for t, ms in r["cpu_ms"].items())
    lines += [f"whole, CUDA events around the launches: {r['events_whole_ms']:.3f} ms (sum of the per-launch "
              f"medians {r['events_sum_ms']:.3f} ms); estimate {r['estimate_ms']:.3f} ms "
              f"({r['estimate_overhead_ms'] * 1e3:.0f} us of it launch overhead)",
              f"whole, replayed as one CUDA graph (what runner(data) launches): "
              f"{r['events_graph_ms'] or float('nan'):.3f} ms",
              f"runner(data), wall, copies included: median {r['wall_ms']:.3f} ms, best {r['wall_min_ms']:.3f} ms",
              f"cpu device on this host: {cpu}",
              f"compile: {r['compile']}"]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpus = HERE.parent / "tests" / "data" / "cvm"
    p.add_argument("models", nargs="*", default=[str(HERE / "resnet"), str(corpus / "model_digits_mlp_000"),
                                                 str(corpus / "model_digits_cnn_000")])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--json", help="write every figure here")
    a = p.parse_args(argv)
    results = []
    for m in a.models:
        r = time_model(pathlib.Path(m), a.runs, a.warmup)
        results.append(r)
        print(report(r), flush=True)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["exact"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
