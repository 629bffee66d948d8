"""The hostile-model round of the model-file fuzzer (issue 10): wide, deep, huge declared sizes and bad API
inputs each end in a correct result (bit-exact with the reference) or a CVMError, under a 1 GiB address space."""

import os
import re
import subprocess
import sys

import pytest
from conftest import CVM_CORPUS, DATA

FUZZER = DATA.parent / "corpus_tools" / "fuzz_model_files.py"


@pytest.mark.parametrize(("device", "attacks"), [("cpu", 40), ("reference", 40)])
def test_hostile_models_end_in_a_result_or_a_cvm_error(device, attacks, tmp_path):
    r = subprocess.run([sys.executable, str(FUZZER), str(CVM_CORPUS), "--device", device, "--count", "0",
                        "--attacks", str(attacks), "--width", "300", "--depth", "300", "--max-memory", "256",
                        "--address-space", "1024", "--seed", "11"],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "CVMC_CACHE_DIR": str(tmp_path)})  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"{attacks} mutated models on {device}" in r.stdout
    assert "0 wrong exception, 0 crash or hang" in r.stdout
    n = attacks // 4
    counts = {m[0]: tuple(map(int, m[1:])) for m in re.findall(r"(\w+): (\d+) attacks, (\d+) rejected, (\d+) ran, "
                                                               r"(\d+) failed", r.stdout)}
    # wide and deep models run (and equal the reference); every huge one is refused before or at allocation;
    # the small models of the input attacks run, and refuse every bad input
    assert counts == {"wide": (n, 0, n, 0), "deep": (n, 0, n, 0), "huge": (n, n, 0, 0), "inputs": (n, 0, n, 0)}
