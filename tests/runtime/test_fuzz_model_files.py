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
