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


def test_coverage_guided_smoke_run_of_the_model_readers(tmp_path):
    """A short atheris run of tests/fuzz/model_files.py (`make fuzz-long` runs it longer): no input ends in an
    exception other than a CVMError. Skipped where atheris is not installed (it is in the dev extra on Linux x86-64)."""
    import pytest

    pytest.importorskip("atheris")
    r = subprocess.run([sys.executable, str(DATA.parent / "fuzz" / "model_files.py"), "--seconds", "8", "--work",
                        str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:]
    assert "; 0 crashes" in r.stdout and "DONE" in r.stdout
