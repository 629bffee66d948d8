"""`make bench`: cvmc's CPU JIT against the numpy reference, then against the int8 engines users deploy.

Workloads: the ResNet-like bench model (`bench/resnet`), conv2d int (1,64,56,56) x (64,64,3,3) pad 1, dense
(64,1024) x (1024,1024), and the digits MLP. For each: the median run time of cvmc on `cpu` and `reference`,
the multiply-add rate, and cold and cached compile times (the cached one in a fresh process, as a user sees it).
Then cvmc against ONNX Runtime int8 / float32, OpenVINO int8 and cvm-runtime on the bench model's ONNX twins,
interleaved in one run (`bench/int8_peers.py`).

    python bench/run.py [--repeat N] [--quick]

cvmc runs with 1 thread and with 2 threads. Then the compile time against model size (`bench/compile_scaling.py`:
1k to 20k nodes, wide graphs and chains, the growth exponent, a plot in bench/compile_scaling.png).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import cvmc
from cvmc.runtime.frontend.graph import load_graph, write_params

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent


def _timeit(fn, repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _single_op_model(op: str, attrs: dict[str, str], data_shape, weight: np.ndarray, out_shape) -> tuple[bytes, bytes]:
    """A one-operator model file (data, weight -> op) without bias, precision 8 in and out of range."""
    shapes = [list(data_shape), list(weight.shape), list(out_shape)]
    doc = {
        "nodes": [
            {"op": "null", "name": "data", "inputs": []},
            {"op": "null", "name": "w", "inputs": []},
            {"op": "cvm_op", "name": f"{op}_2", "inputs": [[0, 0, 0], [1, 0, 0]],
             "attrs": {"func_name": op, "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}},
        ],
        "arg_nodes": [0, 1],
        "node_row_ptr": [0, 1, 2, 3],
        "heads": [[2, 0, 0]],
        "attrs": {
            "shape": ["list_shape", shapes],
            "precision": ["list_int", [8, 8, 32]],
            "op_attrs": ["list_str", ["{}", "{}", json.dumps(attrs)]],
            "dltype": ["list_str", ["int32"] * 3],
            "storage_id": ["list_int", [0, 1, 2]],
        },
        "version": "cvm_1.0.0",
    }
    return json.dumps(doc).encode(), write_params({"w": weight})


def _macs(graph) -> int:
    total = 0
    for n in graph.nodes:
        if n.op == "conv2d":
            w = graph.nodes[n.inputs[1][0]].shapes[0]
            total += int(np.prod(n.shapes[0])) * int(np.prod(w[1:]))
        elif n.op == "dense":
            total += int(np.prod(n.shapes[0])) * graph.nodes[n.inputs[0][0]].shapes[0][1]
    return total


def _cached_load_seconds(json_path: str, params_path: str, cache: str) -> float:
    code = (
        "import time, cvmc; t = time.perf_counter(); "
        f"cvmc.load_model({json_path!r}, {params_path!r}, device='cpu'); print(time.perf_counter() - t)"
    )
    env = {**os.environ, "CVMC_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="fewer repeats, no reference run on the big workloads")
    a = ap.parse_args()
    repeat = 3 if a.quick else a.repeat
    rng = np.random.default_rng(0)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="cvmc-bench-"))

    work = []
    conv_w = rng.integers(-127, 128, size=(64, 64, 3, 3)).astype(np.int32)
    js, pb = _single_op_model("conv2d", {"channels": "64", "kernel_size": "(3, 3)", "padding": "(1, 1)",
                                         "use_bias": "False"}, (1, 64, 56, 56), conv_w, (1, 64, 56, 56))
    (tmp / "conv.json").write_bytes(js)
    (tmp / "conv.params").write_bytes(pb)
    work.append(("conv2d 1x64x56x56 * 64x64x3x3", tmp / "conv.json", tmp / "conv.params"))
    dense_w = rng.integers(-127, 128, size=(1024, 1024)).astype(np.int32)
    js, pb = _single_op_model("dense", {"units": "1024", "use_bias": "False"}, (64, 1024), dense_w, (64, 1024))
    (tmp / "dense.json").write_bytes(js)
    (tmp / "dense.params").write_bytes(pb)
    work.append(("dense 64x1024 * 1024x1024", tmp / "dense.json", tmp / "dense.params"))
    work.append(("bench model (ResNet-like)", HERE / "resnet" / "model.json", HERE / "resnet" / "params.bin"))
    from cvmc.examples import digits as bundled_digits

    digits = bundled_digits()
    work.append(("digits MLP", digits.graph, digits.params))

    rows = []
    for name, jpath, ppath in work:
        graph = load_graph(jpath, ppath)
        x = rng.integers(-127, 128, size=graph.nodes[graph.input_id].shapes[0]).astype(np.int32)
        cache = tempfile.mkdtemp(prefix="cvmc-cache-")
        os.environ["CVMC_CACHE_DIR"] = cache
        t = time.perf_counter()
        cvmc.load_model(jpath, ppath, device="cpu")
        cold = time.perf_counter() - t
        cached = _cached_load_seconds(str(jpath), str(ppath), cache)
        ref = cvmc.load_model(jpath, ppath, device="reference")
        t_ref = _timeit(lambda: ref.run(x), 1 if a.quick else 3)
        want = ref.run(x)
        row = {"name": name, "ref": t_ref, "macs": _macs(graph), "cold": cold, "cached": cached, "exact": True}
        for threads in (1, 2):
            os.environ["CVMC_THREADS"] = str(threads)
            cpu = cvmc.load_model(jpath, ppath, device="cpu")
            row[f"cpu{threads}"] = _timeit(lambda: cpu.run(x), repeat)
            row["exact"] &= all(np.array_equal(p, q) for p, q in zip(cpu.run(x), want))
            row["stats"] = cpu.stats
        rows.append(row)
    os.environ.pop("CVMC_THREADS", None)

    def ms(t: float | None) -> str:
        return f"{t * 1e3:8.2f}ms" if t else f"{'-':>10}"

    def ratio(a_: float | None, b_: float | None) -> str:
        return f"{a_ / b_:7.2f}x" if a_ and b_ else f"{'-':>8}"

    print(f"\n{'workload':30} {'cvmc 1T':>10} {'cvmc 2T':>10} "
          f"{'reference':>10} {'ref/cvmc':>8} {'GMAC/s 1T':>9} {'cold':>6} {'cached':>7} exact")
    for r in rows:
        print(f"{r['name']:30} {ms(r['cpu1'])} {ms(r['cpu2'])} {ms(r['ref'])} "
              f"{ratio(r['ref'], r['cpu1'])} {r['macs'] / r['cpu1'] / 1e9:9.1f} {r['cold']:5.2f}s {r['cached']:6.3f}s "
              f"{'yes' if r['exact'] else 'NO'}")
    for r in rows:
        print(f"{r['name']}: " + ", ".join(f"{k} {v}" for k, v in r["stats"].items()))
    import aot  # bench/, beside this file; aot: the C API row
    import cinn_programs
    import compile_scaling
    import int8_peers

    compile_scaling.run(quick=a.quick)
    peers = int8_peers.main(["--rounds", "5" if a.quick else "20"])
    cinn_status = cinn_programs.main(repeat)
    aot.run(max(20, 10 * repeat))
    return 0 if all(r["exact"] for r in rows) and peers == 0 and cinn_status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
