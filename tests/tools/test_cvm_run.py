"""`cvm-run`: outputs, and exit statuses that mirror the C API (0 ok, 1 logic error, 2 runtime error)."""

import json
import subprocess
import sys

import pytest
from conftest import CVM_CORPUS, case_meta

MLP = CVM_CORPUS / "model_digits_mlp_000"


def cvm_run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_run", *map(str, args)], capture_output=True,
                          text=True, **kw)


def test_inference_prints_the_api_output():
    r = cvm_run(MLP / "model.json", MLP / "params.bin", MLP / "input.bin", "--device", "reference")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(case_meta(MLP)["extra"]["label_of_input"])]


def test_raw_output_file_equals_expected(tmp_path):
    out = tmp_path / "out.bin"
    r = cvm_run(MLP / "model.json", MLP / "params.bin", MLP / "input_i32.bin", "--raw", "-o", out,
                "--device", "reference")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == (MLP / "expected.bin").read_bytes()


def test_gas():
    r = cvm_run(MLP / "model.json", MLP / "params.bin", "--gas", "--device", "reference")
    assert (r.returncode, r.stdout.strip()) == (0, str(case_meta(MLP)["gas"]))


@pytest.mark.parametrize(("case", "status"), [("invalid_000", 1), ("invalid_025", 2), ("invalid_044", 1)])
def test_exit_status_mirrors_the_c_api(case, status):
    d = CVM_CORPUS / case
    r = cvm_run(d / "model.json", d / "params.bin", d / "input.bin", "--device", "reference")
    assert r.returncode == status
    assert "Error" in r.stderr and "Traceback" not in r.stderr


def test_missing_files_are_clear_errors(tmp_path):
    r = cvm_run(tmp_path / "nope.json", tmp_path / "nope.bin", "--gas", "--device", "reference")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = cvm_run(MLP / "model.json", MLP / "params.bin", tmp_path / "none.bin", "--device", "reference")
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_emit_source_writes_cuda_without_a_gpu(tmp_path):
    r = cvm_run(MLP / "model.json", MLP / "params.bin", "--device", "cuda", "--emit-source", tmp_path)
    assert r.returncode == 0, r.stderr
    source = (tmp_path / "kernels.cu").read_text()
    assert source.count('extern "C" __global__') >= 2
    launches = json.loads((tmp_path / "launches.json").read_text())
    assert str(tmp_path / "launches.json") in r.stdout
    assert [launch["kernel"] for launch in launches if launch["macs"]] and all(
        f' {launch["kernel"]}(' in source for launch in launches)


@pytest.mark.parametrize(("cut", "status", "message"), [
    # cvm-runtime's own classes: param_dict.cc:24 is a VERIFY (logic error), ndarray.h:487 a CHECK (runtime error)
    (15, 1, "invalid params file format: no reserved word"),
    (16, 1, "invalid params file format: no name count"),
    (1000, 2, "invalid DLTensor file format: param 'fc1_b' is cut short in its magic"),
])
def test_a_cut_params_file_is_named_with_the_runtimes_class(tmp_path, cut, status, message):
    params = tmp_path / "params.bin"
    params.write_bytes((MLP / "params.bin").read_bytes()[:cut])
    r = cvm_run(MLP / "model.json", params, MLP / "input.bin", "--device", "reference")
    label = {1: "CVMLogicError", 2: "CVMRuntimeError"}[status]
    assert (r.returncode, r.stderr) == (status, f"cvm-run: {label}: params file {str(params)!r}: {message}\n")


@pytest.fixture(scope="module")
def aot_built(tmp_path_factory):
    """The C-API library and a store holding the digits MLP (needs a C compiler)."""
    import os
    import shutil

    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler to build the C-API library")
    from cvmc.runtime.devices import aot

    folder = tmp_path_factory.mktemp("aot")
    env = {**os.environ, "XDG_STATE_HOME": str(folder / "state")}
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]  # the store's secret: this test's
    try:
        aot.build_model((MLP / "model.json").read_bytes(), (MLP / "params.bin").read_bytes(), folder / "store")
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME")
        else:
            os.environ["XDG_STATE_HOME"] = saved
    aot.write_library(folder / "libcvm.so")
    return folder, env


AOT_RUN = """
import runpy, sys
sys.argv = ["cvm-run", *sys.argv[1:]]
try:
    runpy.run_module("cvmc.tools.cvm_run", run_name="__main__")
finally:
    print(sorted({m.split(".")[0] for m in sys.modules if m.startswith(("xdsl", "llvmlite"))} |
                 {m for m in sys.modules if m in ("cvmc.runtime.model", "cvmc.runtime.devices.cpu")}), file=sys.stderr)
"""


def test_one_input_through_the_c_api_from_a_store_imports_no_compiler(aot_built, tmp_path):
    folder, env = aot_built
    files = [MLP / "model.json", MLP / "params.bin"]
    lib = ["--aot-lib", folder / "libcvm.so", "--aot-store", folder / "store"]
    out = tmp_path / "out.bin"
    r = subprocess.run([sys.executable, "-c", AOT_RUN, *map(str, [*files, MLP / "input.bin", "-o", out, *lib])],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "[]"  # no xDSL, no LLVM, not even the Python model API
    assert out.read_bytes() == (MLP / "expected_api.bin").read_bytes()
    r = cvm_run(*files, MLP / "input.bin", *lib, env=env)
    assert r.returncode == 0 and r.stdout.split() == [str(case_meta(MLP)["extra"]["label_of_input"])], r.stderr
    r = cvm_run(*files, "--gas", *lib, env=env)
    assert (r.returncode, r.stdout.strip()) == (0, str(case_meta(MLP)["gas"]))


def test_the_c_api_path_refuses_what_it_cannot_do(aot_built, tmp_path):
    folder, env = aot_built
    files = [MLP / "model.json", MLP / "params.bin", MLP / "input.bin"]
    lib = ["--aot-lib", folder / "libcvm.so"]
    r = cvm_run(*files, *lib, "--raw", env=env)
    assert r.returncode == 64 and "--raw" in r.stderr
    bare = {k: v for k, v in env.items() if k != "CVMC_AOT_STORE"}
    r = cvm_run(*files, *lib, env=bare)
    assert r.returncode == 64 and "--aot-store" in r.stderr
    r = cvm_run(*files, "--aot-lib", tmp_path / "none.so", "--aot-store", folder / "store", env=env)
    assert r.returncode == 2 and f"cannot load the AOT library {str(tmp_path / 'none.so')!r}" in r.stderr
    (tmp_path / "empty").mkdir()
    r = cvm_run(*files, *lib, "--aot-store", tmp_path / "empty", env=env)  # a model the store lacks: status 2
    assert r.returncode == 2 and "CVMAPILoadModel: " in r.stderr and "Traceback" not in r.stderr
    r = cvm_run(*files, *lib, "--aot-store", tmp_path / "nowhere", env=env)
    assert r.returncode == 2 and "cannot open the AOT store" in r.stderr
    short = tmp_path / "short.bin"
    short.write_bytes((MLP / "input.bin").read_bytes()[:-1])
    r = cvm_run(*files[:2], short, *lib, "--aot-store", folder / "store", env=env)
    assert (r.returncode, r.stderr) == (1, "cvm-run: CVMLogicError: expected 64 input bytes, got 63\n")
    r = cvm_run(*files[:2], "--batch", MLP / "input.bin", *lib, "--aot-store", folder / "store", env=env)
    assert r.returncode == 64 and "--batch needs -o" in r.stderr


def test_one_input_from_a_store_by_importtime(aot_built):
    """`python -X importtime`: cvm-run over a store (the folder, --aot-store alone, the library of $CVMC_AOT_LIB)
    imports no xDSL, no llvmlite, no pass, no code generator and not the JIT's model."""
    folder, env = aot_built
    env = {**env, "CVMC_AOT_LIB": str(folder / "libcvm.so")}
    args = [MLP, MLP / "input.bin", "--aot-store", folder / "store"]
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "cvmc.tools.cvm_run", *map(str, args)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(case_meta(MLP)["extra"]["label_of_input"])]
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time")}
    assert "cvmc.runtime.devices.aot_serve" in imported
    assert not {m for m in imported if m.startswith(("xdsl", "llvmlite", "cvmc.passes", "cvmc.codegen"))
                or m in ("cvmc.runtime.model", "cvmc.runtime.engine.jit", "cvmc.runtime.devices.aot")}


def _stack(tmp_path, rows: int = 450):
    import numpy as np

    xs = np.fromfile(MLP / "digits_inputs.bin", np.int8).reshape(-1, 64)[:rows]
    np.save(tmp_path / "xs.npy", xs)
    return xs, np.fromfile(MLP / "digits_oracle_pred.bin", "<i4")[:rows]


def test_a_batch_from_the_store_is_cvm_runtimes_answer_and_imports_no_compiler(aot_built, tmp_path):
    """--aot-store alone (the library from $CVMC_AOT_LIB): cvmc.aot.load's path; --batch gives the API's packing per
    input (the MLP's argmax: one class each), cvm-runtime's predictions for the 450 test digits."""
    import numpy as np

    folder, env = aot_built
    env = {**env, "CVMC_AOT_LIB": str(folder / "libcvm.so")}
    _, oracle = _stack(tmp_path)
    out = tmp_path / "classes.npy"
    args = [MLP / "model.json", MLP / "params.bin", "--batch", tmp_path / "xs.npy", "-o", out,
            "--aot-store", folder / "store"]
    r = subprocess.run([sys.executable, "-c", AOT_RUN, *map(str, args)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "[]"
    assert "450 inputs in" in r.stderr and "[" not in r.stderr.splitlines()[0]  # no bar on a pipe
    assert r.stdout.strip() == str(out)
    got = np.load(out)
    assert got.dtype == np.int32 and got.shape == (450, 1)
    assert np.array_equal(got[:, 0], oracle)


def test_a_npy_input_from_the_store(aot_built, tmp_path):
    import numpy as np

    folder, env = aot_built
    xs, oracle = _stack(tmp_path, 3)
    lib = ["--aot-lib", folder / "libcvm.so", "--aot-store", folder / "store"]
    np.save(tmp_path / "one.npy", xs[1].reshape(1, 64))
    r = cvm_run(MLP / "model.json", MLP / "params.bin", tmp_path / "one.npy", *lib, env=env)
    assert r.returncode == 0 and r.stdout.strip() == str(tmp_path / "one.out.npy"), r.stderr
    assert np.load(tmp_path / "one.out.npy").tolist() == [oracle[1]]
    r = cvm_run(MLP / "model.json", MLP / "params.bin", tmp_path / "xs.npy", *lib, env=env)  # a stack of 3
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "xs.out.npy")[:, 0].tolist() == oracle.tolist()
    np.save(tmp_path / "wide.npy", np.zeros((2, 65), np.int8))  # a row one value past the input
    r = cvm_run(MLP / "model.json", MLP / "params.bin", tmp_path / "wide.npy", *lib, env=env)
    assert (r.returncode, r.stderr) == (1, "cvm-run: CVMLogicError: expected a stack of inputs of 64 values each "
                                           "(N, ...), got an array of shape [2, 65]\n")
    np.save(tmp_path / "floats.npy", np.zeros((2, 64), np.float32))
    r = cvm_run(MLP / "model.json", MLP / "params.bin", tmp_path / "floats.npy", *lib, env=env)
    assert (r.returncode, r.stderr) == (1, "cvm-run: CVMLogicError: expected an integer input, got dtype float32\n")


def test_the_batch_bar_shows_on_a_terminal_only(aot_built, tmp_path):
    """stderr a pseudo-terminal: the bar, redrawn with carriage returns, ends at 100% on a line of its own."""
    import os
    import pty

    folder, env = aot_built
    _stack(tmp_path, 200)
    args = [MLP / "model.json", MLP / "params.bin", "--batch", tmp_path / "xs.npy", "-o", tmp_path / "o.npy",
            "--aot-lib", folder / "libcvm.so", "--aot-store", folder / "store"]
    leader, follower = pty.openpty()
    try:
        r = subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_run", *map(str, args)], stdout=subprocess.PIPE,
                           stderr=follower, env=env)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and read to the end
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert r.returncode == 0, seen
    text = seen.decode()
    assert "\rcvm-run --batch [####################] 100% 200/200 inputs" in text
    assert text.count("\rcvm-run --batch [") == 101  # one redraw per whole percent (0..100), by count, not time
    assert "200 inputs in" in text.splitlines()[-1]


def test_a_warm_cvm_run_imports_no_compiler(tmp_path):
    """`cvm-run` on one input, the second time, loads the model from the cache: no xDSL, no pass imported."""
    import os

    env = {**os.environ, "CVMC_CACHE_DIR": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state")}
    args = [MLP / "model.json", MLP / "params.bin", MLP / "input.bin", "--stats"]
    runs = [subprocess.run([sys.executable, "-X", "importtime", "-m", "cvmc.tools.cvm_run", *map(str, args)],
                           capture_output=True, text=True, env=env) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    label = str(case_meta(MLP)["extra"]["label_of_input"])
    assert [r.stdout.split() for r in runs] == [[label], [label]]
    imported = [{line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time")}
                for r in runs]
    assert "xdsl" in imported[0] and "cvmc.passes.pipelines" in imported[0]  # cold: lowered
    assert not {m for m in imported[1] if m.startswith(("xdsl", "cvmc.passes.pipelines", "cvmc.codegen.llvm"))}
    assert "load (compiled code from the cache)" in runs[1].stderr
