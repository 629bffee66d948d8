"""First inference as a user meets it: each path as a whole process (start, imports, load, first run), on the bench
model (`bench/resnet`), the paths interleaved round by round, medians and ranges, the host named.

Paths (those whose tools are here; the others are listed as skipped):
- cvmc Python, cold: `python -c "import cvmc; cvmc.load_model(...).run(x)"` with an empty cache folder;
- cvmc Python, warm: the same with the cache filled by an earlier process (no lowering, no xDSL);
- cvm-run, one input, warm: `cvm-run model.json params.bin input.bin -o out.bin`; and `--aot-lib` (the C
  API from Python's command line, no compiler imported);
- cvmc C API over an AOT store: the C client of tests/runtime/capi (`cvm-aot build`, `cvm-aot lib`), one
  inference after one warm-up (`--time 1`), no Python in the process;
- cvm-runtime's libcvm: its `run_model` driver in /work/oracle (`$CVMC_ORACLE_RUN_MODEL`), when built there;
- ONNX Runtime int8 (QDQ) and OpenVINO int8, when installed: the bench model's ONNX twin (`int8_peers`),
  `import` + session + first run.
The Python paths also report what they time inside (load_model; ORT's import, session and first run). Then the
cold compile alone, the compiler loaded (`compile_graph(graph, cache=False)` in one process, after a first compile
that imports everything): at 1 and 2 compile threads (`CVMC_COMPILE_THREADS`), interleaved, wall and CPU time
(this process's and its children's: the linker), for this checkout and, with `--baseline DIR`, another one (e.g.
the main checkout) side by side.

    python bench/first_inference.py [--rounds N] [--compile-rounds N] [--baseline DIR]
                                    [--out bench/results/DATE-first-inference.md]

Times are wall clock on whatever else the machine is doing: run it on a quiet machine, and read the ranges. The CPU
column (the process's user and system time, all its threads, its children's too) moves less with the load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "resnet"
CLIENT = ROOT / "tests" / "runtime" / "capi" / "cvm_client.c"
ORACLE = pathlib.Path(os.environ.get("CVMC_ORACLE_RUN_MODEL", "/work/oracle/run_model"))

CVMC = """
import time; t0 = time.perf_counter()
import json, sys, numpy as np, cvmc
t1 = time.perf_counter()
m = cvmc.load_model(sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
x = np.fromfile(sys.argv[3], "<i4").reshape(m.input_shape)
m.run(x)
t3 = time.perf_counter()
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "load_model_ms": 1e3 * (t2 - t1), "run_ms": 1e3 * (t3 - t2),
                  "lowered": m.stats.get("lowered")}))
"""

ORT = """
import time; t0 = time.perf_counter()
import json, sys, numpy as np, onnxruntime as ort
t1 = time.perf_counter()
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
t2 = time.perf_counter()
x = np.fromfile(sys.argv[2], "<i4").astype(np.float32).reshape(s.get_inputs()[0].shape)
s.run(None, {"data": x})
t3 = time.perf_counter()
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "session_ms": 1e3 * (t2 - t1), "run_ms": 1e3 * (t3 - t2)}))
"""

OPENVINO = """
import time; t0 = time.perf_counter()
import json, sys, numpy as np, openvino as ov
t1 = time.perf_counter()
core = ov.Core(); c = core.compile_model(core.read_model(sys.argv[1]), "CPU")
t2 = time.perf_counter()
x = np.fromfile(sys.argv[2], "<i4").astype(np.float32).reshape(list(c.inputs[0].shape))
c.create_infer_request().infer({0: x})
t3 = time.perf_counter()
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "compile_ms": 1e3 * (t2 - t1), "run_ms": 1e3 * (t3 - t2)}))
"""


COMPILE = """
import json, os, sys, time
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.frontend.graph import load_graph
g = load_graph(sys.argv[1], sys.argv[2])
compile_graph(g, cache=False)  # the compiler's imports, the known-answer check, LLVM's first use
out = {}
for r in range(int(sys.argv[3])):
    for threads in ("1", "2"):
        os.environ["CVMC_COMPILE_THREADS"] = threads
        w, c = time.perf_counter(), os.times()
        compile_graph(g, cache=False)
        d = os.times()
        cpu = (d.user + d.system + d.children_user + d.children_system) - (c.user + c.system + c.children_user
                                                                          + c.children_system)
        out.setdefault(threads, []).append([1e3 * (time.perf_counter() - w), 1e3 * cpu])
print(json.dumps(out))
"""


def compile_times(rounds: int, checkouts: dict[str, pathlib.Path]) -> list[str]:
    """The cold compile of the bench model, the compiler loaded, for each checkout: median and range of wall
    time, median CPU time, at 1 and 2 compile threads; the checkouts' processes interleaved."""
    files = [str(BENCH / "model.json"), str(BENCH / "params.bin")]
    found: dict[str, dict[str, list[list[float]]]] = {name: {} for name in checkouts}
    for _ in range(2):  # two processes a checkout, alternated
        for name, root in checkouts.items():
            env = {**os.environ, "PYTHONPATH": str(root)}
            env.pop("CVMC_COMPILE_THREADS", None)
            done = subprocess.run([sys.executable, "-c", COMPILE, *files, str(max(1, rounds // 2))], env=env,
                                  capture_output=True, timeout=1200, cwd=root)
            if done.returncode != 0:
                raise SystemExit(f"compile ({name}): {done.stderr.decode(errors='replace')[-500:]}")
            for threads, runs in json.loads(done.stdout.decode().strip().splitlines()[-1]).items():
                found[name].setdefault(threads, []).extend(runs)
    lines = ["", "Cold compile of the bench model, the compiler loaded (`compile_graph(graph, cache=False)`): wall "
             "median (range), CPU median (this process and the linker's)", "",
             "| checkout | 1 compile thread | 2 compile threads |", "|---|---|---|"]
    for name, by_threads in found.items():
        cells = []
        for threads in ("1", "2"):
            runs = by_threads.get(threads, [])
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            cells.append(f"{statistics.median(walls):.0f} ms ({min(walls):.0f}-{max(walls):.0f}), CPU "
                         f"{statistics.median(cpus):.0f} ms")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines


def host() -> str:
    name = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from cvmc.runtime.driver.target import host_isa
    from cvmc.runtime.engine.llvm_compile import host_target

    return (f"{name} ({host_target()[1]}, cvmc tier {host_isa()}), {len(os.sched_getaffinity(0))} CPUs, load "
            f"{os.getloadavg()[0]:.1f}")


def _peers(work: pathlib.Path) -> dict[str, pathlib.Path]:
    """The bench model's ONNX int8 twin (QDQ), when onnx and onnxruntime are installed."""
    try:
        import onnx
        import onnxruntime  # noqa: F401
    except ImportError:
        return {}
    sys.path.insert(0, str(ROOT / "bench"))
    import int8_peers

    from cvmc.runtime.frontend.graph import load_graph

    graph = load_graph(BENCH / "model.json", BENCH / "params.bin")
    assert graph.input_id is not None
    shape = graph.nodes[graph.input_id].shapes[0]
    bound = (1 << (graph.nodes[graph.input_id].precisions[0] - 1)) - 1
    fp32, int8 = work / "twin_fp32.onnx", work / "twin_int8.onnx"
    onnx.save(int8_peers.onnx_twin(graph), str(fp32))
    int8_peers.quantize(fp32, int8, shape, bound)
    return {"int8": int8}


def paths(work: pathlib.Path, python: str, baseline: pathlib.Path | None = None
          ) -> tuple[dict[str, tuple[list[str], dict[str, str] | None]], list[str]]:
    """Every path's command line and environment (None: a fresh empty cache each run), and the paths skipped;
    with `baseline`, that checkout's warm path too (a cache of its own)."""
    files = [str(BENCH / "model.json"), str(BENCH / "params.bin")]
    base = {**os.environ, "XDG_STATE_HOME": str(work / "state"), "PYTHONPATH": str(ROOT)}
    warm = {**base, "CVMC_CACHE_DIR": str(work / "warm-cache")}
    out: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "cvmc Python, cold (empty cache)": ([python, "-c", CVMC, *files, str(BENCH / "input_i32.bin")], None),
        "cvmc Python, warm cache": ([python, "-c", CVMC, *files, str(BENCH / "input_i32.bin")], warm),
        "cvm-run, one input, warm": ([python, "-m", "cvmc.tools.cvm_run", *files, str(BENCH / "input.bin"),
                                      "-o", str(work / "out.bin")], warm),
    }
    if baseline is not None:
        out[f"cvmc Python, warm cache ({baseline})"] = (
            [python, "-c", CVMC, *files, str(BENCH / "input_i32.bin")],
            {**base, "PYTHONPATH": str(baseline), "CVMC_CACHE_DIR": str(work / "warm-cache-baseline")})
    skipped = []
    if shutil.which("gcc"):
        from cvmc.runtime.devices import aot

        os.environ["XDG_STATE_HOME"] = base["XDG_STATE_HOME"]
        aot.build_model((BENCH / "model.json").read_bytes(), (BENCH / "params.bin").read_bytes(), work / "store")
        aot.write_library(work / "libcvm.so")
        subprocess.run(["gcc", "-O2", "-I", str(aot.CAPI), "-o", str(work / "client"), str(CLIENT), "-L",
                        str(work), "-lcvm", f"-Wl,-rpath,{work}", "-pthread"], check=True)
        out["cvmc C API over an AOT store"] = ([str(work / "client"), "--time", "1", *files,
                                                str(BENCH / "input.bin")],
                                               {**base, "CVMC_AOT_STORE": str(work / "store")})
        out["cvm-run --aot-lib, one input"] = ([python, "-m", "cvmc.tools.cvm_run", *files, str(BENCH / "input.bin"),
                                                "-o", str(work / "out-aot.bin"), "--aot-lib", str(work / "libcvm.so")],
                                               {**base, "CVMC_AOT_STORE": str(work / "store")})
    else:
        skipped.append("cvmc C API (no gcc)")
    if ORACLE.exists():
        out["cvm-runtime libcvm (run_model, cpu)"] = ([str(ORACLE), "--device", "cpu", "-q", "-o", os.devnull,
                                                      *files, str(BENCH / "input.bin")], dict(os.environ))
    else:
        skipped.append(f"cvm-runtime (no {ORACLE})")
    peers = _peers(work)
    if peers:
        out["ONNX Runtime int8 (QDQ)"] = ([python, "-c", ORT, str(peers["int8"]), str(BENCH / "input_i32.bin")],
                                          dict(os.environ))
        try:
            import openvino  # noqa: F401  # pyright: ignore[reportMissingImports]

            out["OpenVINO int8"] = ([python, "-c", OPENVINO, str(peers["int8"]), str(BENCH / "input_i32.bin")],
                                    dict(os.environ))
        except ImportError:
            skipped.append("OpenVINO (not installed)")
    else:
        skipped.append("ONNX Runtime and OpenVINO (onnxruntime not installed)")
    return out, skipped


def run(rounds: int, compile_rounds: int = 0, baseline: pathlib.Path | None = None) -> str:
    work = pathlib.Path(tempfile.mkdtemp(prefix="cvmc-first-"))
    python = sys.executable
    # this checkout's compiled modules, as an install has them ($PYTHONDONTWRITEBYTECODE would otherwise leave every
    # process compiling cvmc's sources anew: 50-100 ms of a warm start)
    folders = [str(ROOT / d) for d in ("cvmc", "runtime", "passes", "codegen", "dialects", "tools")]
    subprocess.run([python, "-m", "compileall", "-q", *folders], check=True, capture_output=True)
    try:
        commands, skipped = paths(work, python, baseline)
        for name, (cmd, env) in commands.items():  # the warm caches: one process fills each
            if name.startswith("cvmc Python, warm cache") and env is not None:
                subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=env.get("PYTHONPATH"))
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}  # the process's CPU time, its threads'
        inside: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
        for r in range(rounds):
            for name, (cmd, env) in commands.items():
                if env is None:  # a cold compile: a cache folder of its own, empty
                    env = {**os.environ, "XDG_STATE_HOME": str(work / "state"), "PYTHONPATH": str(ROOT),
                           "CVMC_CACHE_DIR": str(work / f"cold-{r}")}
                t, c = time.perf_counter(), os.times()
                # run where its checkout is: `python -c` puts the working folder first on the path
                done = subprocess.run(cmd, env=env, capture_output=True, timeout=600, cwd=env.get("PYTHONPATH"))
                walls[name].append(time.perf_counter() - t)
                d = os.times()
                cpus[name].append(d.children_user + d.children_system - c.children_user - c.children_system)
                stdout = done.stdout.decode(errors="replace").strip()
                if done.returncode != 0:
                    raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
                last = stdout.splitlines()[-1:] if stdout else []
                if last and last[0].startswith("{") and "import_ms" in last[0]:
                    inside[name].append(json.loads(last[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = [f"First inference on the bench model (`bench/resnet`), whole process, {rounds} rounds interleaved; "
             f"{datetime.date.today()}, {host()}.", "",
             "| path | median | range | CPU (median) | inside the process (medians) |", "|---|---|---|---|---|"]
    for name, ws in walls.items():
        parts = inside[name]
        detail = ", ".join(f"{k.removesuffix('_ms')} {statistics.median(p[k] for p in parts):.0f} ms"
                           for k in (parts[0] if parts else {}) if k.endswith("_ms"))
        lines.append(f"| {name} | {1e3 * statistics.median(ws):.0f} ms | {1e3 * min(ws):.0f}-{1e3 * max(ws):.0f} "
                     f"ms | {1e3 * statistics.median(cpus[name]):.0f} ms | {detail} |")
    if skipped:
        lines += ["", f"Skipped: {'; '.join(skipped)}."]
    if compile_rounds:
        checkouts = {"this checkout": ROOT, **({f"{baseline}": baseline} if baseline is not None else {})}
        lines += compile_times(compile_rounds, checkouts)
        lines += ["", f"Load average at the end: {os.getloadavg()[0]:.1f}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--compile-rounds", type=int, default=6, help="cold compiles timed per thread count (0: none)")
    ap.add_argument("--baseline", type=pathlib.Path, help="another checkout whose cold compile to time beside")
    ap.add_argument("--out", help="also write the table to this file")
    a = ap.parse_args(argv)
    table = run(a.rounds, a.compile_rounds, a.baseline)
    print(table)
    if a.out:
        pathlib.Path(a.out).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
