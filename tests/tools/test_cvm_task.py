"""`cvm-task run`: output lines, steps, and exit statuses 0 / 1 (logic error) / 2 (runtime error)."""

import os
import subprocess
import sys

import numpy as np
from conftest import DATA

from cvmc.runtime.frontend.taskir_files import export_task, import_task

LENET = DATA / "taskir" / "lenet"


def cvm_task(*args):
    return subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_task", "run", *map(str, args)],
                          capture_output=True, text=True)  # fmt: skip


def test_lenet_prints_its_logits():
    r = cvm_task(LENET / "lenet.task.txt", LENET / "i_0_0_0.dat")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (LENET / "o_0_0_0.dat.txt").read_text()


def test_mlir_and_binary_graphs_and_steps(tmp_path):
    module = import_task(LENET / "lenet.task.txt")
    (tmp_path / "lenet.mlir").write_text(str(module))
    export_task(module, tmp_path / "lenet.task")
    expected = (LENET / "o_0_0_0.dat.txt").read_text()
    assert cvm_task(tmp_path / "lenet.mlir", LENET / "i_0_0_0.dat").stdout == expected
    # Two steps with one frame: the logits twice; with two frames, one per step.
    r = cvm_task(tmp_path / "lenet.task", LENET / "i_0_0_0.dat", "--steps", "2")  # each step under a line of its own
    assert (r.returncode, r.stdout) == (0, f"# step 1\n{expected}# step 2\n{expected}")
    frames = tmp_path / "two.dat"
    frames.write_bytes((LENET / "i_0_0_0.dat").read_bytes() + np.zeros(1024, "<i4").tobytes())
    r = cvm_task(tmp_path / "lenet.task", frames, "--steps", "2")
    assert r.returncode == 0 and r.stdout.startswith(f"# step 1\n{expected}# step 2\n")
    assert r.stdout != f"# step 1\n{expected}# step 2\n{expected}"


def test_a_graph_without_input_needs_no_input_file():
    r = cvm_task(DATA / "taskir" / "prims" / "cvm.task.txt")
    assert r.returncode == 0 and len(r.stdout.split()) == 32


def test_logic_errors_exit_1(tmp_path):
    r = cvm_task(LENET / "lenet.task.txt")
    assert r.returncode == 1
    assert r.stderr == "cvm-task: CVMLogicError: expected 1024 input values (INPUT blocks: 35), got 0\n"
    bad = tmp_path / "bad.task.txt"
    bad.write_text("blocks { id: 3 type: SB precision: INT_8 shape { nf: 2 nx: 1 } output_clusters { } }")
    r = cvm_task(bad)
    assert r.returncode == 1 and "block 3: expected no shape 'x' for SB, got 1" in r.stderr
    assert "Traceback" not in r.stderr


def test_runtime_errors_exit_2(tmp_path):
    r = cvm_task(tmp_path / "missing.task")
    assert r.returncode == 2 and "cannot read task file" in r.stderr
    garbage = tmp_path / "garbage.task.txt"
    garbage.write_text("not a task graph {")
    r = cvm_task(garbage)
    assert r.returncode == 2 and "cannot parse task file" in r.stderr and "Traceback" not in r.stderr


def test_device_cpu_runs_the_compiled_graph(tmp_path):
    r = subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_task", "run", str(LENET / "lenet.task.txt"),
                        str(LENET / "i_0_0_0.dat"), "--device", "cpu", "--steps", "2"],
                       capture_output=True, text=True, env={**os.environ, "CVMC_CACHE_DIR": str(tmp_path)})  # fmt: skip
    assert (r.returncode, r.stderr) == (0, "")
    expected = (LENET / "o_0_0_0.dat.txt").read_text()
    assert r.stdout == f"# step 1\n{expected}# step 2\n{expected}"
