"""One convention over every console script in pyproject.toml: `--version` prints one line `TOOL (cvmc) X.Y.Z`
and exits 0; `-v`/`--verbose` works (before or after a subcommand); --help lists both and the exit statuses; an
error is one line `TOOL: CVMLogicError: ...`, `TOOL: CVMRuntimeError: ...` or (usage, 64) `TOOL: error: ...`."""

import pathlib
import subprocess
import sys
import tomllib

import pytest
from conftest import CVM_CORPUS

import cvmc
from cvmc.tools import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
MLP = CVM_CORPUS / "model_digits_mlp_000"

# Per tool: a command with -vv that fails on a missing file (or, for a tool that reads none, succeeds), its
# status and what its stderr names. A console script added to pyproject.toml fails test_every_script_is_covered
# until it has a row here.
VERBOSE_RUNS = {
    "cvm-opt": (["-vv", "{d}/missing.mlir"], 2, "missing.mlir"),
    "cvm-run": (["{d}/missing.json", MLP / "params.bin", "--gas", "-vv"], 2, "missing.json"),
    "cvm-translate": (["--import-cvm", "{d}/missing.json", MLP / "params.bin", "-vv"], 2, "missing.json"),
    "cvm-task": (["run", "-vv", "{d}/missing.task"], 2, "missing.task"),
    "cvm-cache": (["clear", "-vv"], 1, "nothing deleted"),  # a folder others may write to: refused
    "cvm-examples": (["-vv", "list"], 0, ""),
    "cvm-aot": (["build", "-vv", "{d}/missing.json", MLP / "params.bin", "--store", "{d}/store"], 2, "missing.json"),
    "cvm-quantize": (["{d}/missing.onnx", "--calibration", "{d}/c.npy", "-o", "{d}/out", "-vv"], 2, "missing.onnx"),
    "cvm-bench": (["{d}/missing.json", MLP / "params.bin", "-vv"], 2, "missing.json"),
}


def _entry(tool: str):
    module, func = SCRIPTS[tool].split(":")
    return getattr(__import__(module, fromlist=[func]), func)


def _run_script(tool: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The console script as its installed wrapper runs it: the entry point of pyproject.toml, `sys.exit(main())`."""
    module, func = SCRIPTS[tool].split(":")
    code = f"import sys; from {module} import {func}; sys.exit({func}())"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=300)


def _status(main, argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse: --version, --help, usage errors
        return e.code  # type: ignore[return-value]


def test_every_script_is_covered():
    assert set(SCRIPTS) == set(VERBOSE_RUNS)


@pytest.mark.parametrize("tool", sorted(SCRIPTS))
def test_version_is_one_line(tool, capsys):
    assert _status(_entry(tool), ["--version"]) == 0
    assert capsys.readouterr().out == f"{tool} (cvmc) {cvmc.__version__}\n"


@pytest.mark.parametrize("tool", sorted(SCRIPTS))
def test_help_lists_the_common_flags_and_the_statuses(tool, capsys):
    assert _status(_entry(tool), ["--help"]) == 0
    out = capsys.readouterr().out
    assert "--version" in out and "-v, --verbose" in out and "exit status:" in out
    assert "TOOL: CVMLogicError: message" in out and "streams: stdout carries the results only" in out


@pytest.mark.parametrize("tool", sorted(SCRIPTS))
def test_a_usage_error_is_64_with_the_usage_line(tool):
    r = _run_script(tool, ["--no-such-flag"])
    assert r.returncode == cli.EX_USAGE
    assert r.stderr.startswith("usage: ") and f"{tool}: error: " in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("tool", sorted(SCRIPTS))
def test_verbose_and_the_error_line(tool, tmp_path):
    import os

    argv, code, named = VERBOSE_RUNS[tool]
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    env = {**os.environ, "CVMC_CACHE_DIR": str(open_folder), "XDG_STATE_HOME": str(tmp_path / "state")}
    r = _run_script(tool, [str(a).format(d=tmp_path) for a in argv], env)
    assert r.returncode == code, r.stderr
    lines = r.stderr.splitlines()
    assert "cvmc: xdsl " in r.stderr  # -vv: the debug log, which names what cvmc builds on
    assert "Traceback" not in r.stderr
    if code:
        assert lines[-1].startswith(f"{tool}: {cli.LABELS[code]}: ") and named in lines[-1]
    else:
        assert r.stdout


def test_verbose_counts_before_and_after_a_subcommand():
    parser = cli.ArgumentParser(prog="t")
    cli.add_common_arguments(parser)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("go")
    assert parser.parse_args(["go"]).verbose == 0
    assert parser.parse_args(["-v", "go"]).verbose == 1
    assert parser.parse_args(["go", "-vv"]).verbose == 2


def test_error_line_form():
    assert cli.error_line("t", 1, "m") == "t: CVMLogicError: m"
    assert cli.error_line("t", 2, "m") == "t: CVMRuntimeError: m"
    assert cli.error_line("t", 64, "m") == "t: error: m"
