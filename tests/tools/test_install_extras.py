"""Installs as users expect (issue 39): `make demo` installs the core alone, the dev and ray extras only for the
targets that test or measure; extras take lower bounds, not pins, and none but dev brings torch; install hints
work for an install from a clone (`pip install '.[cuda]'`, not `'cvmc[cuda]'`: cvmc is on no index)."""

import pathlib
import re
import tomllib

import pytest

import cvmc

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]


def _name(req: str) -> str:
    return re.split(r"[\s\[<>=~!;]", req, maxsplit=1)[0].lower()


def test_the_core_is_numpy_xdsl_llvmlite_and_protobuf():
    assert sorted(_name(r) for r in PROJECT["dependencies"]) == ["llvmlite", "numpy", "protobuf", "xdsl"]


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_no_extra_pins_a_version(extra):
    assert not [r for r in EXTRAS[extra] if "==" in r.split(";")[0]], EXTRAS[extra]


def test_only_dev_brings_torch():
    assert [e for e, reqs in EXTRAS.items() if "torch" in map(_name, reqs)] == ["dev"]
    assert [_name(r) for r in EXTRAS["quantize"]] == ["onnx"]


def _targets() -> dict[str, str]:
    """Each Makefile target's line of prerequisites."""
    return dict(re.findall(r"^([\w.$()/-]+):\s*(.*)$", (ROOT / "Makefile").read_text(), flags=re.M))


def test_make_demo_installs_the_core_and_make_test_the_dev_extras():
    text = (ROOT / "Makefile").read_text()
    stamp = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n)+)", text, flags=re.M).group(1)
    assert "pip install -q -e .\n" in stamp and "[" not in stamp  # the core: no extra
    dev = re.search(r"^\$\(DEV\):.*\n((?:\t.*\n)+)", text, flags=re.M).group(1)
    assert "'.[dev,ray]'" in dev
    targets = _targets()
    assert targets["demo"] == "$(STAMP)" and targets["$(DEV)"] == "$(STAMP)"
    for target in ("test", "lint", "sanitize", "bench", "fuzz-long", "mutate", "aot-consensus"):
        assert targets[target] == "$(DEV)", target


def test_install_hints_work_from_a_clone():
    found = []
    for folder in ("runtime", "tools", "cvmc"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            if "'cvmc[" in text and "'.[" not in text:  # an index name alone: no hint for a clone's install
                found.append(str(path.relative_to(ROOT)))
    assert not found
    assert "'cvmc[" not in (ROOT / "README.md").read_text()


def test_dir_shows_the_lazy_names():
    names = dir(cvmc)
    for name in ("load_model", "Model", "CvmBuilder", "CinnBuilder", "quantize", "Quantized", "examples",
                 "CVMLogicError", "__version__"):
        assert name in names, name
    assert set(cvmc.__all__) <= set(names)
