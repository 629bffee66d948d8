"""`make bench`, the C API row: the bench model through cvm-runtime's C API, served by `cvm-aot`.

Per-inference medians on the bench model (tests/data/cvm/model_bench_resnet_000), with 1 and 2 threads:
- cvmc's C API: `cvm-aot lib` + `cvm-aot build`, timed by a C client (tests/runtime/capi/cvm_client.c --time:
  `CVMAPIInference` alone, after one warm-up, no Python in the process);
- cvmc's Python API: `load_model(..., device="cpu").infer` on the same input bytes;
- cvm-runtime's own libcvm.so through its `time_model` driver (../shared/tools/oracle/README.md), its CPU backend
  (OpenMP, OMP_NUM_THREADS) and its FORMAL one, when the driver is found: `$CVMC_ORACLE_TIME_MODEL`, else
  /work/oracle/time_model.

    python bench/aot.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import cvmc
from cvmc.runtime.devices import aot

ROOT = pathlib.Path(__file__).parent.parent
BENCH = ROOT / "tests" / "data" / "cvm" / "model_bench_resnet_000"
CLIENT = ROOT / "tests" / "runtime" / "capi" / "cvm_client.c"
ORACLE = pathlib.Path(os.environ.get("CVMC_ORACLE_TIME_MODEL", "/work/oracle/time_model"))


def _median_ms(cmd: list[str], env: dict[str, str]) -> float | None:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        print(f"  {' '.join(cmd[:2])}: failed ({r.returncode}): {r.stderr.strip()[-300:]}")
        return None
    return float(json.loads(r.stdout.strip().splitlines()[-1])["median_ms"])


def _infer_ms(repeat: int, threads: int) -> float:
    os.environ["CVMC_THREADS"] = str(threads)
    try:
        model = cvmc.load_model(BENCH / "model.json", BENCH / "params.bin", device="cpu")
    finally:
        os.environ.pop("CVMC_THREADS", None)
    x = (BENCH / "input.bin").read_bytes()
    model.infer(x)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        model.infer(x)
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def run(repeat: int = 100) -> dict[str, dict[int, float | None]]:
    """Every path's median milliseconds per inference, by thread count; prints the table."""
    if shutil.which("gcc") is None:
        print("C API row: no gcc to build the client, skipped")
        return {}
    work = pathlib.Path(tempfile.mkdtemp(prefix="cvmc-bench-aot-"))
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state"), "CVMC_AOT_STORE": str(work / "store")}
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]
    try:
        t = time.perf_counter()
        aot.build_model((BENCH / "model.json").read_bytes(), (BENCH / "params.bin").read_bytes(), work / "store")
        build_s = time.perf_counter() - t
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = saved
    aot.write_library(work / "libcvm.so")
    subprocess.run(["gcc", "-O2", "-I", str(aot.CAPI), "-o", str(work / "client"), str(CLIENT), "-L", str(work),
                    "-lcvm", f"-Wl,-rpath,{work}", "-pthread"], check=True)
    files = [str(BENCH / n) for n in ("model.json", "params.bin", "input.bin")]
    rows: dict[str, dict[int, float | None]] = {"cvmc C API (cvm-aot)": {}, "cvmc load_model().infer": {}}
    if ORACLE.exists():
        rows["cvm-runtime libcvm.so, cpu"] = {}
        rows["cvm-runtime libcvm.so, formal"] = {}
    for threads in (1, 2):
        rows["cvmc C API (cvm-aot)"][threads] = _median_ms(
            [str(work / "client"), "--time", str(repeat), *files], {**env, "CVMC_THREADS": str(threads)})
        rows["cvmc load_model().infer"][threads] = _infer_ms(repeat, threads)
        if ORACLE.exists():
            omp = {**os.environ, "OMP_NUM_THREADS": str(threads)}
            rows["cvm-runtime libcvm.so, cpu"][threads] = _median_ms(
                [str(ORACLE), "--device", "cpu", "-n", str(max(5, repeat // 5)), *files], omp)
            rows["cvm-runtime libcvm.so, formal"][threads] = _median_ms(
                [str(ORACLE), "--device", "formal", "-n", "5", *files], omp)
    shutil.rmtree(work, ignore_errors=True)

    base = rows["cvmc C API (cvm-aot)"]
    print(f"\nC API on the bench model (cvm-aot build: {build_s:.2f} s), per-inference median")
    print(f"{'path':32} {'1 thread':>10} {'2 threads':>10} {'/ C API 1T':>11} {'/ C API 2T':>11}")
    for name, by in rows.items():
        cells = [f"{by[t]:8.3f}ms" if by.get(t) else f"{'-':>10}" for t in (1, 2)]
        ratios = [f"{by[t] / base[t]:10.2f}x" if by.get(t) and base.get(t) else f"{'-':>11}" for t in (1, 2)]
        print(f"{name:32} {cells[0]} {cells[1]} {ratios[0]} {ratios[1]}")
    if not ORACLE.exists():
        print(f"(cvm-runtime's time_model not found at {ORACLE}: set CVMC_ORACLE_TIME_MODEL to compare with it)")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=100)
    run(ap.parse_args().repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
