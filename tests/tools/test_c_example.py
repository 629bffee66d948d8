"""examples/c/infer.c, the README's C client of c_api.h: built against the library of `cvm-aot lib` and run on
models of a store, as the README shows (the cgo example's twin, tests/runtime/test_aot.py)."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import CVM_CORPUS, case_meta

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "c" / "infer.c"
VALID, INVALID = CVM_CORPUS / "model_digits_mlp_000", CVM_CORPUS / "invalid_000"


def _files(case: pathlib.Path) -> list[str]:
    return [str(case / n) for n in ("model.json", "params.bin", "input.bin")]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_c_example_runs_a_model_and_gives_the_runtimes_status(tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "CVMC_AOT_STORE": str(tmp_path / "store"),
           "CVMC_CACHE_DIR": str(tmp_path / "cache")}

    def aot(*args: str) -> None:
        r = subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_aot", *args], env=env, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr

    aot("lib", "-o", str(tmp_path / "libcvm.so"), "--header", str(tmp_path / "c_api.h"))
    for case in (VALID, INVALID):
        aot("build", *_files(case)[:2], "--store", str(tmp_path / "store"))
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "infer"), str(EXAMPLE),
                    f"-I{tmp_path}", f"-L{tmp_path}", "-lcvm", f"-Wl,-rpath,{tmp_path}"], check=True)
    r = subprocess.run([str(tmp_path / "infer"), *_files(VALID)], env=env, capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (0, f"{case_meta(VALID)['extra']['label_of_input']}\n"), r.stderr
    assert r.stderr == f"gas {case_meta(VALID)['gas']}\n"
    r = subprocess.run([str(tmp_path / "infer"), *_files(INVALID)], env=env, capture_output=True, text=True)
    assert r.returncode == 1 and "CVMAPILoadModel: status 1: node 1 ('clip_1')" in r.stderr and r.stdout == ""


def test_the_readme_shows_the_example():
    readme = (ROOT / "README.md").read_text()
    assert f"```c\n{EXAMPLE.read_text()}```" in readme
