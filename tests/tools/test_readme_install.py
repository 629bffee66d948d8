"""The README as a new user meets it: a non-editable `pip install` into a fresh venv, then every ```sh and
```python block of README.md run from a temporary folder outside the checkout, each block on its own (so a name
it does not define fails it), after the ```c block is saved as `infer.c`, as the README says (```text blocks are
commands with placeholders: the clone, the install, not run). A block that imports an extra that is not installed
(ray) is skipped.

No network: the venv sees this environment's site-packages through a .pth line (whose own .pth files, the
editable install of the checkout among them, are not processed), and pip builds without isolation."""

import importlib.util
import os
import pathlib
import re
import shutil
import site
import subprocess
import sys

import numpy as np
import pytest

import cvmc.examples

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ["pyproject.toml", "README.md", "LICENSE", "cvmc", "dialects", "passes", "codegen", "runtime", "tools"]


def readme_blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_has_runnable_blocks():
    assert len(readme_blocks("sh")) >= 2
    assert len(readme_blocks("python")) >= 1


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[pathlib.Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, src / name)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (pathlib.Path(purelib) / "_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                        "--no-build-isolation", "--no-index", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    work = tmp / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["CVMC_CACHE_DIR"] = str(tmp / "cache")  # the README clears the cache: never the caller's
    return work, env


def test_the_install_is_not_the_checkout(installed):
    work, env = installed
    r = subprocess.run(["python", "-c", "import cvmc, cvmc.examples, importlib.metadata as m; "
                        "from cvmc.runtime.devices import aot; print(cvmc.__file__); "
                        "print(cvmc.examples.digits().graph); "
                        "print(cvmc.__version__); print(m.version('cvmc')); print(aot.CAPI / 'capi.c')"],
                       cwd=work, env=env, capture_output=True, text=True, check=True)
    module, graph, version, installed_version, capi = r.stdout.split()
    assert not module.startswith(str(ROOT)) and "site-packages" in module
    assert "site-packages" in graph and pathlib.Path(graph).is_file()
    assert version == installed_version == "0.1.0"  # pyproject reads the version from cvmc/__init__.py
    assert "site-packages" in capi and pathlib.Path(capi).is_file()  # the C API's sources, for `cvm-aot`


def test_readme_blocks_are_runnable_or_text():
    """Every fenced block is run (sh, python), saved and built (c) or plain text: none is a fragment."""
    text = (ROOT / "README.md").read_text()
    langs = re.findall(r"^```(\w*)\n", text, flags=re.M)[::2]  # the opening fences (the closing ones between)
    assert set(langs) <= {"sh", "python", "c", "text"}, langs
    (c,) = readme_blocks("c")
    assert c == (ROOT / "examples" / "c" / "infer.c").read_text()


def test_readme_sh_blocks_run_from_another_folder(installed):
    work, env = installed
    (work / "infer.c").write_text(readme_blocks("c")[0])
    script = "set -euo pipefail\n" + "\n".join(readme_blocks("sh"))
    r = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = r.stdout.splitlines()
    assert "39850" in lines  # the digits MLP's gas
    logits = [int(v) for v in cvmc.examples.lenet().expected()]
    assert any(lines[i:i + 10] == [str(v) for v in logits] for i in range(len(lines)))  # LeNet's output


def test_readme_python_blocks_run_from_another_folder(installed):
    work, env = installed
    printed = ""
    for i, block in enumerate(readme_blocks("python")):
        if re.search(r"^import ray$", block, flags=re.M) and importlib.util.find_spec("ray") is None:
            continue  # the ray extra is not installed here
        (work / f"block{i}.py").write_text(block)
        r = subprocess.run(["python", f"block{i}.py"], cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 0, f"block {i}:\n{block}\nstderr:\n{r.stderr}"
        printed += r.stdout
    assert "441 of 450" in printed  # the README's figure for the digits MLP
    x, labels = cvmc.examples.digits().test_set()
    assert x.shape == (450, 64) and x.dtype == np.int8 and labels.shape == (450,)
