"""Mutated model files (the shared fuzzer): every outcome is a success or a CVMError, never a crash or hang."""

import subprocess
import sys

from conftest import CVM_CORPUS, DATA

FUZZER = DATA.parent / "corpus_tools" / "fuzz_model_files.py"


def test_mutated_model_files_never_crash():
    r = subprocess.run([sys.executable, str(FUZZER), str(CVM_CORPUS), "--device", "reference", "--count", "300",
                        "--seed", "7"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "0 wrong exception, 0 crash or hang" in r.stdout


def test_coverage_guided_smoke_run_of_every_reader(tmp_path):
    """A short atheris run of tests/fuzz/readers.py on each reader (`make fuzz-long` runs them longer): no input
    ends in an internal error. Bounded by a count of runs with a fixed seed, not by time, so every run of the test
    tries the same inputs whatever the machine's load. Skipped where atheris is not installed (the dev extra has
    it on Linux x86-64)."""
    import pytest

    pytest.importorskip("atheris")
    r = subprocess.run([sys.executable, str(DATA.parent / "fuzz" / "readers.py"), "--seconds", "600", "--work",
                        str(tmp_path), "--libfuzzer", "-runs=1000", "-seed=7"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-4000:]
    assert r.stdout.count("; 0 crashes") == 4 and r.stdout.count("cov: ") == 4, r.stdout


def test_a_param_whose_byte_count_wraps_is_no_array_found_by_the_coverage_fuzzer():
    """Found by tests/fuzz/readers.py in 600 s: a param of shape [2^60 + 2, 4, 1, 1] (its element count fits
    int64, its byte count wraps to 32) with 32 bytes of data was reshaped to that shape: a ValueError. It is no
    array now, as when the element count wraps, and a graph that names it is refused by the shape check."""
    import struct

    import pytest

    from cvmc.errors import CVMError
    from cvmc.runtime.frontend.graph import ARRAY_MAGIC, LIST_MAGIC, load_graph, read_params

    shape = ((1 << 60) + 2, 4, 1, 1)
    data = (struct.pack("<QQQ", LIST_MAGIC, 0, 1) + struct.pack("<Q", 1) + b"w" + struct.pack("<Q", 1)
            + struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, 1, 0, 4, 0, 32, 1) + struct.pack("<4q", *shape)
            + struct.pack("<q", 32) + bytes(32))
    assert read_params(data)["w"].size == 0
    case = CVM_CORPUS / "dense_000"
    with pytest.raises(CVMError):
        load_graph((case / "model.json").read_bytes(), data)


def test_smoke_run_of_the_c_api_call_programs(tmp_path):
    """3,000 inputs of tests/fuzz/capi.py, the same ones every run (a seed and a count, no time bound): programs
    of C-API calls (loads, frees, inferences, getters, forged and freed handles) on an ASan+UBSan libcvm: every
    status as the rules say, no sanitizer report."""
    import shutil

    import pytest

    pytest.importorskip("atheris")
    if shutil.which("gcc") is None:
        pytest.skip("the library is built with gcc")
    r = subprocess.run([sys.executable, str(DATA.parent / "fuzz" / "capi.py"), "--runs", "3000", "--seed", "1",
                        "--work", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:]
    assert "; 0 crashes" in r.stdout and "fuzz capi (call programs): 3000 executions" in r.stdout


def test_the_c_api_fuzzer_refuses_a_count_below_one():
    r = subprocess.run([sys.executable, str(DATA.parent / "fuzz" / "capi.py"), "--runs", "0"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "expected --runs >= 1, got 0" in r.stderr
