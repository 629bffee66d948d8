"""`cvm-bench`: how fast a model runs here, as `benchmark_app -m`, `tvmc run --print-time` and
`onnxruntime_perf_test` tell it: cold (load and compile, the first run) and warm latency (median, p90, p99, min),
and throughput (`run_batch` over the model's threads).

    cvm-bench net/                                  # a model folder (or model.json params.bin)
    cvm-bench net/ --threads 1 --repeat 200 --warmup 20
    cvm-bench net/ --time 5 --json                  # runs for 5 s of warm runs; one JSON object on stdout
    cvm-bench net/ --compare threads=1,2            # one row per setting, each in a fresh process
    cvm-bench net/ --compare tier=avx2,generic      # CVMC_ISA per row (kernel tiers); device=cpu,reference too

Inputs are random integers within the input's precision (seed 0), or `--input FILE.npy`. The warm runs are the
`--repeat` runs after `--warmup` ones, or as many as `--time SECONDS` allows (at least `--repeat`'s minimum, 10).
Throughput: `--batch N` inputs (default 16 a thread) through `run_batch`, best of 3. A `--compare` row runs in
a process of its own (a tier is chosen once a process, from `CVMC_ISA`), one after another, never at once.
Results on stdout; the exit statuses of `cli.EXIT_STATUSES`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from cvmc.tools import cli

COMPARE_KEYS = ("device", "tier", "threads")


def _positive(kind: type, lo: float = 1):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or v < lo:
            raise argparse.ArgumentTypeError(f"expected a number >= {lo}, got {text!r}")
        return v
    return parse


def _compare(text: str) -> tuple[str, list[str]]:
    key, _, values = text.partition("=")
    items = [v for v in values.split(",") if v]
    if key not in COMPARE_KEYS or not items:
        raise argparse.ArgumentTypeError(f"expected KEY=V1,V2,... with KEY one of {', '.join(COMPARE_KEYS)}, got "
                                         f"{text!r}")
    return key, items


def percentile(sorted_ms: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of sorted times."""
    k = max(0, min(len(sorted_ms) - 1, int(np.ceil(q / 100 * len(sorted_ms))) - 1))
    return sorted_ms[k]


def latency(times_ms: list[float]) -> dict[str, float]:
    s = sorted(times_ms)
    return {"median_ms": statistics.median(s), "p90_ms": percentile(s, 90), "p99_ms": percentile(s, 99),
            "min_ms": s[0], "mean_ms": statistics.fmean(s), "runs": len(s)}


def _inputs(model, n: int, path: str | None) -> np.ndarray:
    from cvmc.dialects.cvm_rules import precision_bound

    if path is not None:
        from cvmc.tools.cvm_run import read_batch

        x = np.asarray(read_batch(path))
        return x
    assert model.input_shape is not None and model.input_precision is not None
    bound = min(precision_bound(model.input_precision), 127)
    return np.random.default_rng(0).integers(-bound, bound + 1, (n, *model.input_shape), dtype=np.int32)


def measure(a: argparse.Namespace) -> dict[str, object]:
    """One setting: load (cold), the first run, warm latency, throughput."""
    from cvmc.dialects.cvm_rules import MAX_MEMORY
    from cvmc.runtime.driver.target import detect_target
    from cvmc.runtime.model import DEFAULT_DEVICE, accepts_shape, load_model

    device = a.device or DEFAULT_DEVICE
    t0 = time.perf_counter()
    model = load_model(a.graph, a.params, device=device, threads=a.threads, max_memory=MAX_MEMORY)
    load_ms = (time.perf_counter() - t0) * 1e3
    if model.input_shape is None:
        xs = np.zeros((1, 0), np.int32)
        one = None
    else:
        batch = a.batch or 16 * model.threads
        xs = _inputs(model, batch, a.inputs)
        if accepts_shape(tuple(xs.shape), model.input_shape):  # one input: the stack is it
            xs = xs.reshape(1, *model.input_shape)
        one = xs[0]
    run = (lambda: model.run(one)) if one is not None else (lambda: model.run())
    t = time.perf_counter()
    run()
    first_ms = (time.perf_counter() - t) * 1e3
    for _ in range(a.warmup):
        run()
    times: list[float] = []
    deadline = time.perf_counter() + a.time if a.time else None
    while len(times) < a.repeat or (deadline is not None and time.perf_counter() < deadline):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1e3)
        if deadline is not None and len(times) >= 10 and time.perf_counter() >= deadline:
            break
    result: dict[str, object] = {
        "model": model.name, "device": device, "threads": model.threads,
        "target": str(detect_target()) if device == "cpu" else None,
        "cold": {"load_ms": load_ms, "cache_hit": bool(model.stats.get("cache_hit")), "first_run_ms": first_ms},
        "warm": latency(times), "gas": model.gas,
    }
    if one is not None:
        best = 0.0
        for _ in range(3):
            t = time.perf_counter()
            model.run_batch(xs)
            best = max(best, len(xs) / (time.perf_counter() - t))
        result["throughput"] = {"inputs_per_s": best, "batch": len(xs), "replicas": min(model.threads, len(xs))}
    return result


def text(r: dict) -> str:
    warm, cold = r["warm"], r["cold"]
    lines = [f"model {r['model']}: device {r['device']}" + (f" ({r['target']})" if r.get("target") else "")
             + f", {r['threads']} thread{'s' * (r['threads'] != 1)}, gas {r['gas']}",
             f"cold: load {'(from the cache) ' if cold['cache_hit'] else '+ compile '}{cold['load_ms']:.1f} ms, "
             f"first run {cold['first_run_ms']:.3f} ms",
             f"warm ({warm['runs']} runs): median {warm['median_ms']:.3f} ms, p90 {warm['p90_ms']:.3f} ms, "
             f"p99 {warm['p99_ms']:.3f} ms, min {warm['min_ms']:.3f} ms"]
    if "throughput" in r:
        t = r["throughput"]
        lines.append(f"throughput: {t['inputs_per_s']:.1f} inputs/s (run_batch of {t['batch']}, {t['replicas']} "
                     f"replica{'s' * (t['replicas'] != 1)}, best of 3)")
    return "\n".join(lines)


def compare(a: argparse.Namespace, argv: list[str]) -> list[dict]:
    """Each setting of `--compare` (their product) in a fresh process of this tool, one at a time."""
    import itertools

    keys = [k for k, _ in a.compare]
    rows = []
    base = []
    skip = False
    for arg in argv:  # the command line without --compare, --json and what --compare sets
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in ("--compare", "--device", "--threads") and "=" not in arg:
            skip = True
            continue
        if name in ("--compare", "--device", "--threads", "--json"):
            continue
        base.append(arg)
    for values in itertools.product(*(v for _, v in a.compare)):
        setting = dict(zip(keys, values, strict=True))
        cmd = [sys.executable, "-m", "cvmc.tools.cvm_bench", *base, "--json"]
        env = dict(os.environ)
        if "tier" in setting:
            env["CVMC_ISA"] = setting["tier"]
        if "device" in setting or a.device:
            cmd += ["--device", setting.get("device", a.device)]
        if "threads" in setting or a.threads:
            cmd += ["--threads", str(setting.get("threads", a.threads))]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            reason = (r.stderr.strip().splitlines() or [f"status {r.returncode}"])[-1]
            rows.append({"setting": setting, "error": reason})
            continue
        rows.append({"setting": setting, **json.loads(r.stdout)})
    return rows


def table(rows: list[dict]) -> str:
    head = "| setting | target | median ms | p90 ms | p99 ms | min ms | inputs/s | cold load ms |"
    out = [head, "|" + "---|" * 8]
    for r in rows:
        name = ", ".join(f"{k}={v}" for k, v in r["setting"].items())
        if "error" in r:
            out.append(f"| {name} | {r['error']} | | | | | | |")
            continue
        w = r["warm"]
        tp = r.get("throughput", {}).get("inputs_per_s")
        out.append(f"| {name} | {r.get('target') or r['device']} | {w['median_ms']:.3f} | {w['p90_ms']:.3f} | "
                   f"{w['p99_ms']:.3f} | {w['min_ms']:.3f} | {'' if tp is None else f'{tp:.1f}'} | "
                   f"{r['cold']['load_ms']:.1f} |")
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    p = cli.ArgumentParser(prog="cvm-bench", description="Time a CVM model: cold and warm latency, throughput.",
                           epilog=(__doc__ or "").split("\n\n", 2)[-1] + "\n" + cli.EXIT_STATUSES)
    cli.add_common_arguments(p)
    p.add_argument("graph", metavar="MODEL", help="the model folder, or the graph JSON (then the params binary)")
    p.add_argument("params", nargs="?", help="the params binary (none after a folder)")
    p.add_argument("--device", default=None, choices=["reference", "cpu", "cuda"], help="cpu (default), reference "
                   "or cuda")
    p.add_argument("--threads", type=_positive(int), default=None, help="cpu threads (default: $CVMC_THREADS, "
                   "else the physical cores)")
    p.add_argument("--repeat", type=_positive(int), default=100, help="warm runs timed (default 100)")
    p.add_argument("--warmup", type=_positive(int, 0), default=10, help="runs before the timed ones (default 10)")
    p.add_argument("--time", type=_positive(float, 0), default=None, metavar="SECONDS",
                   help="time warm runs for this long instead (at least 10 runs)")
    p.add_argument("--batch", type=_positive(int), default=None, help="inputs of the throughput run (default 16 a "
                   "thread)")
    p.add_argument("--input", dest="inputs", metavar="NPY",
                   help="inputs (.npy: one, or a stack) instead of random ones")
    p.add_argument("--json", action="store_true", help="one JSON object (a list with --compare) on stdout")
    p.add_argument("--compare", type=_compare, action="append", default=[], metavar="KEY=V1,V2",
                   help="rows over device=..., tier=... (CVMC_ISA) or threads=...; repeatable (their product)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    a = parser.parse_args(argv)
    cli.setup_logging(a)

    def body() -> int:
        from cvmc.tools.cvm_run import model_arguments, warn_threads

        model_arguments(a, "cvm-bench")
        if a.compare:
            rows = compare(a, argv)
            print(json.dumps(rows, indent=1) if a.json else table(rows))
            return 0
        warn_threads(a.threads, "cvm-bench")
        r = measure(a)
        print(json.dumps(r, indent=1) if a.json else text(r))
        return 0

    return cli.run_tool("cvm-bench", body)


if __name__ == "__main__":
    sys.exit(main())
