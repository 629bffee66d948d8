"""tools/check_imports.py: the checkout keeps the import rule, and every kind of upward arrow is found; the
committed `cvmc/<layer>` links match pyproject.toml's package-dir mapping."""

import pathlib
import subprocess
import sys
import tomllib

from cvmc.tools.check_imports import check, sources

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_checkout_keeps_the_rule():
    assert check(ROOT) == []
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "check_imports.py")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "", r.stdout


def test_each_layer_is_a_relative_link_in_cvmc_as_pyproject_maps_it():
    """`cvmc.passes` resolves from a plain checkout (no install, no build step) to the same files the wheel and
    the editable install take, for python, pyright and editors alike."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in mapping.items():
        link = ROOT / package.replace(".", "/")
        if package == "cvmc":
            assert folder == "cvmc" and not link.is_symlink()
            continue
        assert link.is_symlink() and link.readlink() == pathlib.Path("..") / folder, package
        assert link.resolve() == (ROOT / folder).resolve()


def _tree(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for name in ("cvmc", "dialects", "passes", "codegen", "runtime", "tools"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "cvmc" / "errors.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_every_kind_of_upward_arrow_is_found(tmp_path):
    root = _tree(tmp_path, {
        "dialects/d.py": "from cvmc.errors import CVMLogicError\nimport cvmc.passes.p\n",
        "passes/p.py": "from ..runtime import r\nfrom . import q\nfrom cvmc.dialects import d\n",
        "codegen/c.py": "def f():\n    from cvmc import load_model\n    from cvmc import __version__, errors\n",
        "runtime/r.py": ("from typing import TYPE_CHECKING\nimport cvmc\nV = cvmc.__version__\nM = cvmc.Model\n"
                         "if TYPE_CHECKING:\n    from cvmc.tools import cli\nfrom cvmc.codegen import c\n"),
        "tools/t.py": "from cvmc.runtime import r\nimport cvmc\n",
        "cvmc/face.py": "from cvmc.tools import t\n",
    })  # fmt: skip
    found = [line.split(": ", 1)[0] for line in check(root)]
    assert found == ["dialects/d.py:2", "passes/p.py:1", "codegen/c.py:2", "runtime/r.py:4", "runtime/r.py:6"]


def test_the_layer_links_are_read_once(tmp_path):
    root = _tree(tmp_path, {"passes/p.py": "import cvmc.runtime\n"})
    (root / "cvmc" / "passes").symlink_to(pathlib.Path("..") / "passes")
    names = [p.relative_to(root).as_posix() for p in sources(root)]
    assert names.count("passes/p.py") == 1 and not any(n.startswith("cvmc/passes") for n in names)
    assert [line.split(": ", 1)[0] for line in check(root)] == ["passes/p.py:1"]
