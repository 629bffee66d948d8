"""A paper estimate of the CUDA path on an H100 SXM, from `launches.json`, against the CPU's measured time.

    python bench/gpu_estimate.py [MODEL_DIR] [--launches launches.json] [--repeat N]

MODEL_DIR (default bench/resnet) holds model.json, params.bin, case.json and input_i32.bin. Without
`--launches` the tool writes the model's sources with `cvmc.runtime.devices.cuda.emit_sources` (what
`cvm-run --emit-source DIR` writes) and reads the `launches.json` there. It prints per launch the grid, the
threads with work, the occupancy, the compute and memory bounds and the estimated time, then the model's
estimated time against the cpu device's measured median.

Published figures (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022, table "NVIDIA H100 SXM5";
the H100 datasheet; the CUDA C++ Programming Guide, "Arithmetic Instructions" and "Compute Capabilities" tables
for compute capability 9.0):
  - 132 SMs, max boost clock 1,980 MHz (datasheet);
  - 32-bit integer multiply-add: 64 results per clock per SM (programming guide, cc 9.0);
  - `__dp4a` (four int8 products summed into an int32): assumed at the IMAD rate, 64 per clock per SM, i.e.
    256 int8 multiply-adds per clock per SM (the programming guide does not list it separately);
  - HBM3 bandwidth 3.35 TB/s (datasheet);
  - at most 2,048 resident threads and 32 resident blocks per SM (programming guide, cc 9.0);
  - loads: 32 load instructions of a thread (one 32-bit word each) per clock per SM (the whitepaper's SM: four
    partitions of 8 LD/ST units), the same for global and shared memory.

Assumptions of the model (not published figures; they make a lower bound on time, not a prediction):
  - a thread issues a dependent multiply-add chain at most once per `DEPENDENT_LATENCY` = 4 clocks (the
    integer pipeline's latency), so a launch's compute rate is min(peak, threads * clock / 4) multiply-adds a
    second (times 4 for a launch whose kernel uses `__dp4a`);
  - every argument byte is moved once between HBM and the SMs (the caches are ignored: a roofline bound);
  - every load a launch issues (`loads` in launches.json: counted at the loop level like `macs`, global and
    shared) takes one LD/ST slot, and hits the L1 or L2 cache whenever its bytes were already moved (so loads
    bound issue, bytes bound HBM);
  - integer index arithmetic and the epilogue are not counted (the compute bound is multiply-adds alone);
  - each launch costs `LAUNCH_OVERHEAD_S` = 3 us (a kernel launch on one stream, without CUDA graphs).
A launch's time is max(compute, loads, memory) + overhead; the model's is the sum over its launches.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).parent

SMS = 132
CLOCK_HZ = 1.98e9
IMAD_PER_CLOCK_PER_SM = 64
DP4A_PER_CLOCK_PER_SM = 64
HBM_BYTES_PER_S = 3.35e12
THREADS_PER_SM = 2048
DEPENDENT_LATENCY = 4
LOADS_PER_CLOCK_PER_SM = 32
LAUNCH_OVERHEAD_S = 3e-6


def kernels_using_dp4a(source: str) -> set[str]:
    """The C symbols of the kernels whose body calls `__dp4a` (from the generated kernels.cu)."""
    out: set[str] = set()
    for match in re.finditer(r"void b_(\w+)\(.*?\n}\n", source, re.S):
        if "__dp4a" in match.group(0):
            out.add("k_" + match.group(1))
    return out


def estimate(launch: dict[str, Any], dp4a: bool) -> dict[str, float]:
    """The paper estimate of one launch (see the module docstring): threads, occupancy, bounds and time."""
    block = launch["block"][0] * launch["block"][1] * launch["block"][2]
    grid = launch["grid"][0] * launch["grid"][1] * launch["grid"][2]
    threads = min(grid * block, max(1, launch["work"]))
    occupancy = threads / (SMS * THREADS_PER_SM)
    per_instruction = 4 if dp4a else 1
    peak = SMS * (DP4A_PER_CLOCK_PER_SM if dp4a else IMAD_PER_CLOCK_PER_SM) * per_instruction * CLOCK_HZ
    rate = min(peak, threads * CLOCK_HZ / DEPENDENT_LATENCY * per_instruction)
    compute = launch["macs"] / rate
    loads = launch.get("loads", 0) / (SMS * LOADS_PER_CLOCK_PER_SM * CLOCK_HZ)
    memory = (launch["read_bytes"] + launch["written_bytes"]) / HBM_BYTES_PER_S
    return {"threads": threads, "occupancy": occupancy, "compute_s": compute, "loads_s": loads, "memory_s": memory,
            "time_s": max(compute, loads, memory) + LAUNCH_OVERHEAD_S}  # fmt: skip


def cpu_time(model_dir: pathlib.Path, repeat: int) -> float:
    """The median time of one run of the model on the cpu device (compile excluded)."""
    import numpy as np

    import cvmc

    model = cvmc.load_model((model_dir / "model.json").read_bytes(), (model_dir / "params.bin").read_bytes(),
                            device="cpu")  # fmt: skip
    shape = json.loads((model_dir / "case.json").read_text())["input_shape"]
    data = np.fromfile(model_dir / "input_i32.bin", dtype="<i4").reshape(shape)
    model.run(data)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        model.run(data)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", nargs="?", default=str(HERE / "resnet"), help="folder with model.json and params.bin")
    p.add_argument("--launches", help="a launches.json (default: emit the model's sources to a temporary folder)")
    p.add_argument("--repeat", type=int, default=5, help="runs of the cpu device to take the median of")
    a = p.parse_args(argv)
    model_dir = pathlib.Path(a.model)
    if a.launches:
        launches_path = pathlib.Path(a.launches)
    else:
        from cvmc.runtime.devices.cuda import emit_sources
        from cvmc.runtime.frontend.graph import load_graph

        out = pathlib.Path(tempfile.mkdtemp(prefix="cvmc-gpu-estimate-"))
        graph = load_graph((model_dir / "model.json").read_bytes(), (model_dir / "params.bin").read_bytes())
        emit_sources(graph, out)
        launches_path = out / "launches.json"
    launches = json.loads(launches_path.read_text())
    source_path = launches_path.with_name("kernels.cu")
    dp4a = kernels_using_dp4a(source_path.read_text()) if source_path.exists() else set()
    print(f"{'launch':<40} {'grid':>6} {'block':>5} {'threads':>8} {'occup.':>7} {'MMAC':>8} "
          f"{'compute us':>10} {'loads us':>8} {'memory us':>9} {'est. us':>8}")  # fmt: skip
    total = 0.0
    for launch in launches:
        e = estimate(launch, launch["kernel"] in dp4a)
        total += e["time_s"]
        print(f"{launch['kernel']:<40} {launch['grid'][0]:>6} {launch['block'][0]:>5} {e['threads']:>8} "
              f"{100 * e['occupancy']:>6.2f}% {launch['macs'] / 1e6:>8.2f} {1e6 * e['compute_s']:>10.2f} "
              f"{1e6 * e['loads_s']:>8.2f} {1e6 * e['memory_s']:>9.2f} {1e6 * e['time_s']:>8.1f}")  # fmt: skip
    macs = sum(launch["macs"] for launch in launches)
    on_dp4a = sum(launch["macs"] for launch in launches if launch["kernel"] in dp4a)
    busy = total - LAUNCH_OVERHEAD_S * len(launches)
    print(f"H100 SXM paper estimate: {len(launches)} launches, {macs / 1e6:.1f} M multiply-adds "
          f"({on_dp4a / 1e6:.1f} M on __dp4a), {1e3 * total:.3f} ms "
          f"({1e6 * busy:.1f} us of bounds, {1e6 * LAUNCH_OVERHEAD_S * len(launches):.0f} us of launch overhead)")
    if a.repeat > 0:
        cpu = cpu_time(model_dir, a.repeat)
        print(f"cpu device, measured median of {a.repeat}: {1e3 * cpu:.3f} ms (estimate / cpu = {total / cpu:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
