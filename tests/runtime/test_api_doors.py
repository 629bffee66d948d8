"""Every door of the API returns a CVMError: inputs checked for type and range (never wrapped or truncated),
the builder's shapes, $CVMC_THREADS, bounded file reads."""

import os
import threading

import numpy as np
import pytest
from conftest import CVM_CORPUS

import cvmc
from cvmc.runtime.builder import CvmBuilder
from cvmc.runtime.engine.threads import MAX_THREADS, default_threads
from cvmc.runtime.frontend.files import read_bounded, read_text

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


@pytest.fixture(scope="module")
def model():
    """Input [4] of precision 8, output relu(x)."""
    b = CvmBuilder()
    return b.compile([b.relu(b.create_input([4], precision=8))], device="reference")


@pytest.mark.parametrize(("x", "found"), [
    (np.full(4, 2**64 - 1, np.uint64), "18446744073709551615 (dtype uint64)"),  # wrapped to -1 before
    (np.full(4, 2**31, np.uint32), "2147483648 (dtype uint32)"),
    (np.full(4, INT32_MAX + 1, np.int64), "2147483648 (dtype int64)"),
    (np.full(4, INT32_MIN - 1, np.int64), "-2147483649 (dtype int64)"),
    (np.array([1, 2, 3, 2**40]), "1099511627776 (dtype int64)"),
])  # fmt: skip
def test_values_outside_int32_are_refused(model, x, found):
    with pytest.raises(cvmc.CVMLogicError, match=r"expected input values in int32 \[-2147483648, 2147483647\], got "
                       + found.replace("(", r"\(").replace(")", r"\)")):
        model.run(x)


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.int64])
def test_values_at_the_int32_bounds_are_saturated_to_the_precision(model, dtype):
    """Within int32 the runtime's semantics hold: the input is saturated to its precision (8: +-127)."""
    x = np.array([INT32_MAX, 0, 127, 128], dtype=dtype)
    assert model.run(x)[0].tolist() == [127, 0, 127, 127]
    if np.dtype(dtype).kind == "i":
        assert model.run(np.array([INT32_MIN, -1, 5, 6], dtype=dtype))[0].tolist() == [0, 0, 5, 6]


@pytest.mark.parametrize(("x", "message"), [
    (np.array([2.5, 1.0, 0.0, 1.0]), "expected an integer input, got dtype float64"),
    (np.array([1.0, 2.0, 3.0, 4.0], np.float32), "expected an integer input, got dtype float32"),
    (np.array(["a", "b", "c", "d"]), "expected an integer input, got dtype <U1"),
    ([[1, 2], [3]], "expected the input as an integer array of shape [4]"),
    (np.zeros(5, np.int32), "expected an input of shape [4], got [5]"),
])  # fmt: skip
def test_bad_inputs_are_logic_errors(model, x, message):
    with pytest.raises(cvmc.CVMLogicError) as e:
        model.run(x)
    assert message in str(e.value)


@pytest.mark.parametrize("value", ["str", 7, None, np.zeros(4, np.int8), [1, 2, 3, 4]])
def test_infer_takes_bytes_only(model, value):
    with pytest.raises(cvmc.CVMLogicError, match=f"expected the input as bytes, got {type(value).__name__}"):
        model.infer(value)


def test_infer_takes_any_bytes_like(model):
    raw = np.array([-3, 4, 127, -128], np.int8).tobytes()
    want = bytes([0, 4, 127, 0])
    assert model.infer(raw) == model.infer(bytearray(raw)) == model.infer(memoryview(raw)) == want
    # a memoryview of another format is counted in bytes, as its buffer
    assert model.infer(memoryview(np.frombuffer(raw, np.int32))) == want


@pytest.mark.parametrize("shape", [[2.5], [2.0], ["2"], [True, 2], 5, "12", [[2]]])
def test_builder_shapes_are_whole_numbers(shape):
    """`create_input([2.5])` was truncated to [2]."""
    with pytest.raises(cvmc.CVMLogicError, match="expected the shape of 'data' as a sequence of integers"):
        CvmBuilder().create_input(shape, precision=8)
    with pytest.raises(cvmc.CVMLogicError, match="expected the shape of 'p' as a sequence of integers"):
        CvmBuilder()._variable("p", shape, 8)


def test_builder_shapes_take_numpy_integers():
    t = CvmBuilder().create_input(np.array([2, 3]), precision=8)
    assert t.shape == (2, 3)


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5", "", " ", str(MAX_THREADS + 1), "1e3"])
def test_cvmc_threads_must_be_an_integer_in_range(monkeypatch, value):
    monkeypatch.setenv("CVMC_THREADS", value)
    if not value:  # empty: the default
        assert default_threads() >= 1
        return
    with pytest.raises(cvmc.CVMLogicError, match=r"expected \$CVMC_THREADS to be an integer in \[1, 256\]"):
        default_threads()


@pytest.mark.parametrize("value", ["1", str(MAX_THREADS)])
def test_cvmc_threads_at_its_bounds(monkeypatch, value):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(MAX_THREADS)))
    monkeypatch.setenv("CVMC_THREADS", value)
    assert default_threads() == int(value)


@pytest.mark.parametrize(("value", "threads"), [("2", 2), ("3", 3), ("4", 3), ("64", 3), ("", 3)])
def test_threads_are_at_most_the_cpus_this_process_may_use(monkeypatch, value, threads):
    """$CVMC_THREADS and the default stop at the affinity mask's CPUs (3 here: at the bound and one past it);
    beyond them threads only wait for each other (64 on 2 CPUs: the bench model 15x slower)."""
    from cvmc.runtime.engine import threads as th

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(th, "physical_cores", lambda: 3)
    monkeypatch.setenv("CVMC_THREADS", value)
    assert default_threads() == threads


def test_cvmc_threads_error_comes_from_load_model(monkeypatch):
    monkeypatch.setenv("CVMC_THREADS", "abc")
    mlp = CVM_CORPUS / "model_digits_mlp_000"
    with pytest.raises(cvmc.CVMLogicError, match="CVMC_THREADS"):
        cvmc.load_model(mlp / "model.json", mlp / "params.bin", device="cpu")


@pytest.mark.parametrize("device", [["cpu"], None, "gpu"])
def test_unknown_devices(device):
    mlp = CVM_CORPUS / "model_digits_mlp_000"
    with pytest.raises(cvmc.CVMLogicError, match="unknown device"):  # the caller's fault
        cvmc.load_model(mlp / "model.json", mlp / "params.bin", device=device)


# --- bounded reads ------------------------------------------------------------------------------------------


def test_read_bounded_at_the_limit_and_one_past(tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(b"x" * 10)
    assert read_bounded(f, "input", 10) == b"x" * 10
    with pytest.raises(cvmc.CVMLogicError, match=r"input '.*f.bin' holds 10 bytes, more than 9 \(the limit\)"):
        read_bounded(f, "input", 9)


def test_read_bounded_stops_on_endless_files(tmp_path):
    with pytest.raises(cvmc.CVMLogicError, match=r"input '/dev/zero' holds more than 4096 bytes \(why\)"):
        read_bounded("/dev/zero", "input", 4096, "why")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write_forever():
        try:
            with open(fifo, "wb") as w:
                while True:
                    w.write(b"\0" * 65536)
        except (BrokenPipeError, OSError):
            pass

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    with pytest.raises(cvmc.CVMLogicError, match="holds more than 100000 bytes"):
        read_bounded(fifo, "input", 100000)
    writer.join(timeout=10)
    assert not writer.is_alive()


@pytest.mark.parametrize("path", ["/nonexistent/x", "/", 3.5])
def test_unreadable_paths_are_runtime_errors(path):
    with pytest.raises(cvmc.CVMRuntimeError, match="cannot read input"):
        read_bounded(path, "input")


def test_a_nul_in_a_path_is_a_logic_error():
    with pytest.raises(cvmc.CVMLogicError, match=r"cannot read input 'nul\\x00in/path': the path holds a NUL"):
        read_bounded("nul\0in/path", "input")


def test_read_text_refuses_binary(tmp_path):
    f = tmp_path / "f.mlir"
    f.write_bytes(b"ok\xff")
    with pytest.raises(cvmc.CVMRuntimeError, match="not UTF-8 text"):
        read_text(f, "IR file")
    f.write_text("ok")
    assert read_text(f, "IR file") == "ok"


def test_read_bounded_reserves_no_more_than_it_reads(tmp_path):
    """A small file under a 1 GiB limit is read in a process of 1 GiB of address space (`f.read(limit)` would
    reserve the whole limit up front and fail)."""
    import subprocess
    import sys

    f = tmp_path / "small.bin"
    f.write_bytes(b"abc")
    script = ("import resource\nfrom cvmc.runtime.frontend.files import read_bounded\n"
              "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
              f"print(read_bounded({str(f)!r}, 'input', 1 << 30))\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "b'abc'\n"), r.stderr[-1000:]
