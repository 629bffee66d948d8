"""Compile time against model size: generated models of 1k to 20k nodes, cold compiles, the growth exponent.

Shapes of model (each node count is the number of operator nodes):
- `wide`: N heads, each a relu of the input (one kernel call per head);
- `chain`: one long elementwise chain (relu, cvm_right_shift, clip, ...), fused into groups;
- `add chain`: x = cvm_clip(elemwise_add(x, data)), repeated: two-input elementwise ops;
- `concat`: N relus of the input concatenated into one head.

    python bench/compile_scaling.py [--sizes 1000,2000,5000,10000,20000] [--kinds wide,chain] [--plot out.png]

Each compile runs cold (a fresh cache folder) in this process; the exponent is the slope of log(time) against
log(nodes) by least squares. `--stage` stops at the LLVM IR (no O3, no JIT) to time the compiler's own passes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).parent
SIZES = (1000, 2000, 5000, 10000, 20000)
KINDS = ("wide", "chain", "add chain", "concat")
SHAPE = [1, 16]


def _model(nodes: list[tuple[str, str, list[int], dict[str, str]]], heads: list[int],
           shapes: list[list[int]], precisions: list[int]) -> bytes:
    """A cvm-runtime model.json: `nodes` after the input `data` (node 0), as (op, name, inputs, attrs)."""
    doc_nodes = [{"op": "null", "name": "data", "inputs": []}]
    op_attrs = ["{}"]
    for op, name, inputs, attrs in nodes:
        doc_nodes.append({"op": "cvm_op", "name": name, "inputs": [[i, 0, 0] for i in inputs],
                          "attrs": {"func_name": op, "num_inputs": str(len(inputs)), "num_outputs": "1",
                                    "flatten_data": "0"}})
        op_attrs.append(json.dumps(attrs))
    n = len(doc_nodes)
    doc = {
        "nodes": doc_nodes,
        "arg_nodes": [0],
        "node_row_ptr": list(range(n + 1)),
        "heads": [[h, 0, 0] for h in heads],
        "attrs": {
            "shape": ["list_shape", shapes],
            "precision": ["list_int", precisions],
            "op_attrs": ["list_str", op_attrs],
            "dltype": ["list_str", ["int32"] * n],
            "storage_id": ["list_int", list(range(n))],
        },
        "version": "cvm_1.0.0",
    }
    return json.dumps(doc).encode()


def generate(kind: str, n: int) -> bytes:
    """The model.json of `kind` with `n` operator nodes (its params are empty)."""
    nodes: list[tuple[str, str, list[int], dict[str, str]]] = []
    if kind == "wide":
        nodes = [("relu", f"relu_{i}", [0], {}) for i in range(n)]
        return _model(nodes, list(range(1, n + 1)), [SHAPE] * (n + 1), [8] * (n + 1))
    if kind == "chain":
        cycle = [("relu", {}), ("cvm_right_shift", {"precision": "8", "shift_bit": "1"}),
                 ("clip", {"a_min": "-100", "a_max": "100"})]
        for i in range(n):
            op, attrs = cycle[i % 3]
            nodes.append((op, f"{op}_{i}", [i], attrs))
        return _model(nodes, [n], [SHAPE] * (n + 1), [8] * (n + 1))
    if kind == "add chain":
        precisions = [8]
        for i in range(n):
            if i % 2 == 0:
                nodes.append(("elemwise_add", f"add_{i}", [i, 0], {}))
                precisions.append(9)
            else:
                nodes.append(("cvm_clip", f"clip_{i}", [i], {"precision": "8"}))
                precisions.append(8)
        return _model(nodes, [n], [SHAPE] * (n + 1), precisions)
    if kind == "concat":
        nodes = [("relu", f"relu_{i}", [0], {}) for i in range(n - 1)]
        nodes.append(("concatenate", "concat", list(range(1, n)), {"axis": "1"}))
        shapes = [SHAPE] * n + [[SHAPE[0], SHAPE[1] * (n - 1)]]
        return _model(nodes, [n], shapes, [8] * (n + 1))
    raise ValueError(f"unknown kind {kind!r}")


def compile_seconds(model_json: bytes, stage: str = "jit") -> tuple[float, float]:
    """Wall and CPU seconds to compile a model cold: load, lower and (`stage == "jit"`) optimize and JIT it;
    `"llvm"`: up to the LLVM IR text (no O3, no JIT)."""
    from cvmc.runtime.frontend.graph import load_graph, write_params

    params = write_params({})
    wall, cpu = time.perf_counter(), time.process_time()
    if stage == "jit":
        import cvmc

        cvmc.load_model(model_json, params, device="cpu")
    else:
        from cvmc.passes.loops.target import DEFAULT
        from cvmc.runtime.driver.compile import llvm_kernels, lower

        llvm_kernels(lower(load_graph(model_json, params), DEFAULT))
    return time.perf_counter() - wall, time.process_time() - cpu


def exponent(points: list[tuple[int, float]]) -> float:
    """The least-squares slope of log(seconds) against log(nodes)."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(s) for _, s in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


Results = dict[str, list[tuple[int, float, float]]]  # kind -> (nodes, wall seconds, CPU seconds)


def measure(kinds: tuple[str, ...] = KINDS, sizes: tuple[int, ...] = SIZES, stage: str = "jit",
            verbose: bool = True) -> Results:
    """Cold compile seconds by kind and size (each compile with a fresh cache folder)."""
    results: Results = {}
    with tempfile.TemporaryDirectory(prefix="cvmc-scaling-") as cache:  # imports and LLVM's start, once
        os.environ["CVMC_CACHE_DIR"] = cache
        compile_seconds(generate("chain", 10), stage)
    for kind in kinds:
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix="cvmc-scaling-") as cache:
                os.environ["CVMC_CACHE_DIR"] = cache
                wall, cpu = compile_seconds(generate(kind, n), stage)
            results.setdefault(kind, []).append((n, wall, cpu))
            if verbose:
                print(f"  {kind:10} {n:6} nodes: {wall:7.2f} s ({cpu:.2f} s CPU)", flush=True)
    return results


def report(results: Results) -> str:
    """The table: seconds by kind and size, and the growth exponents of wall and CPU time."""
    sizes = sorted({n for pts in results.values() for n, _, _ in pts})
    lines = [f"{'compile time against model size':32}" + "".join(f"{n:>9}" for n in sizes) +
             f"{'exponent':>10}{'(CPU)':>7}"]
    for kind, pts in results.items():
        by = {n: wall for n, wall, _ in pts}
        cells = "".join(f"{by[n]:8.2f}s" if n in by else f"{'-':>9}" for n in sizes)
        wall_exp = exponent([(n, w) for n, w, _ in pts])
        cpu_exp = exponent([(n, c) for n, _, c in pts])
        lines.append(f"  {kind:30}{cells}{wall_exp:10.2f}{cpu_exp:7.2f}")
    return "\n".join(lines)


def plot(results: Results, path: pathlib.Path) -> bool:
    """A log-log plot of the wall times as a PNG; False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for kind, pts in results.items():
        ax.loglog([n for n, _, _ in pts], [w for _, w, _ in pts], "o-",
                  label=f"{kind} (exponent {exponent([(n, w) for n, w, _ in pts]):.2f})")
    ax.set_xlabel("operator nodes")
    ax.set_ylabel("cold compile, load to JIT (s)")
    ax.set_title("cvmc: compile time against model size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def run(quick: bool = False, kinds: tuple[str, ...] = KINDS, sizes: tuple[int, ...] | None = None,
        stage: str = "jit", png: pathlib.Path = HERE / "compile_scaling.png") -> Results:
    """Measure, print the table, write the plot (`make bench`'s section)."""
    sizes = sizes or (SIZES[:3] if quick else SIZES)
    print(f"\ncompile time against model size ({'load to JIT' if stage == 'jit' else 'load to LLVM IR'}, cold, "
          "one run each)")
    results = measure(kinds, sizes, stage)
    print(report(results))
    if plot(results, png):
        print(f"plot: {png}")
    else:
        print("matplotlib is not installed: no plot (make bench installs it)")
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--stage", choices=("jit", "llvm"), default="jit")
    ap.add_argument("--plot", type=pathlib.Path, default=HERE / "compile_scaling.png")
    a = ap.parse_args(argv)
    run(kinds=tuple(a.kinds.split(",")), sizes=tuple(int(s) for s in a.sizes.split(",")), stage=a.stage, png=a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
