"""cvm-translate: translations, and exit status 1 for logic errors, 2 for runtime errors, never a traceback."""

import subprocess
import sys

import pytest
from conftest import CVM_CORPUS, DATA, case_meta, corpus_cases

from cvmc.runtime.frontend.graph import load_graph
from cvmc.tools import cli
from cvmc.tools.cvm_translate import main

MLP = CVM_CORPUS / "model_digits_mlp_000"
LOAD_ERRORS = [d for d in corpus_cases("invalid") if case_meta(d)["stage"] == "load"]


def _import(case, out):
    return main(["--import-cvm", str(case / "model.json"), str(case / "params.bin"), "-o", str(out)])


def test_import_export_round_trip(tmp_path, capsys):
    assert _import(MLP, tmp_path / "m.mlir") == 0
    assert main(["--export-cvm", str(tmp_path / "m.mlir"), "-o", str(tmp_path / "out")]) == 0
    a = load_graph(MLP / "model.json", MLP / "params.bin")
    b = load_graph(tmp_path / "out" / "model.json", tmp_path / "out" / "params.bin")
    assert a.nodes == b.nodes and a.heads == b.heads and a.gas == b.gas == case_meta(MLP)["gas"]
    assert a.postprocess == b.postprocess == "argmax"
    assert capsys.readouterr().err == ""


def test_import_to_stdout(capsys):
    assert main(["--import-cvm", str(MLP / "model.json"), str(MLP / "params.bin")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("builtin.module {\n  func.func @main(%data: tensor<1x64xi32, #cvm.prec<8>>)")
    assert out.count("cvm.dense") == 2


@pytest.mark.parametrize("case", LOAD_ERRORS, ids=lambda d: d.name)
def test_invalid_models_exit_with_their_class(case, tmp_path, capsys):
    """Each corpus model cvm-runtime rejects at load: status 1 (logic) or 2 (runtime), as the runtime's API."""
    status = case_meta(case)["api_status"]
    assert _import(case, tmp_path / "m.mlir") == status
    err = capsys.readouterr().err
    assert err.startswith(f"cvm-translate: {cli.LABELS[status]}: ") and "Traceback" not in err
    assert not (tmp_path / "m.mlir").exists()


INVALID_IR = """func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) -> tensor<5xi32, #cvm.prec<8>> {
  %0 = cvm.relu %data {name = "r"} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<5xi32, #cvm.prec<8>>
  func.return %0 : tensor<5xi32, #cvm.prec<8>>
}
"""


@pytest.mark.parametrize(("args", "text", "status", "message"), [
    (["--import-cvm", "{d}/missing.json", "{d}/missing.bin"], None, 2, "missing.json"),
    (["--import-cvm", "{d}/in.mlir", str(MLP / "params.bin")], "{not json", 2, "graph JSON: expected '\"' at byte 2"),
    (["--export-cvm", "{d}/in.mlir", "-o", "{d}/out"], "func.func @main(", 2, "in.mlir:1:"),
    (["--export-cvm", "{d}/in.mlir", "-o", "{d}/out"], "%0 = cvm.nope", 2, "Operation cvm.nope is not registered"),
    (["--export-cvm", "{d}/in.mlir", "-o", "{d}/out"], INVALID_IR, 1,
     "cvm.relu 'r': expected result 0 of shape [4], got [5]"),
    (["--export-cvm", "{d}/in.mlir", "-o", "{d}/out"], "func.func @main() {\n  func.return\n}", 2,
     "expected @main to return at least one value"),
    (["--import-task", "{d}/in.mlir"], "not a task", 2, "cannot parse task file"),
])
def test_errors(tmp_path, capsys, args, text, status, message):
    if text is not None:
        (tmp_path / "in.mlir").write_text(text)
    assert main([a.format(d=tmp_path) for a in args]) == status
    err = capsys.readouterr().err
    assert err.startswith(f"cvm-translate: {cli.LABELS[status]}: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_usage_errors(capsys):
    for args in ([], ["--export-cvm", "x.mlir"]):
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 64  # EX_USAGE, distinct from 1 (logic) and 2 (runtime)
    assert "usage: cvm-translate" in capsys.readouterr().err
    assert main(["--import-cvm", "a.json"]) == 64  # one file that is no folder
    assert "'a.json' is not a folder: name the model folder, or model.json then params.bin" in capsys.readouterr().err


def test_task_round_trip(tmp_path):
    src = DATA / "taskir" / "lenet" / "lenet.task.txt"
    assert main(["--import-task", str(src), "-o", str(tmp_path / "t.mlir")]) == 0
    assert "taskgraph.graph" in (tmp_path / "t.mlir").read_text()
    assert main(["--export-task", str(tmp_path / "t.mlir"), "-o", str(tmp_path / "t.task.txt")]) == 0
    assert main(["--import-task", str(tmp_path / "t.task.txt"), "-o", str(tmp_path / "t2.mlir")]) == 0
    assert (tmp_path / "t2.mlir").read_text() == (tmp_path / "t.mlir").read_text()


def test_entry_point(tmp_path):
    """The installed command: exit status and a one-line message, no traceback."""
    exe = [sys.executable, "-m", "cvmc.tools.cvm_translate"]
    bad = CVM_CORPUS / "invalid_000"
    r = subprocess.run([*exe, "--import-cvm", str(bad / "model.json"), str(bad / "params.bin")],
                       capture_output=True, text=True)
    assert r.returncode == case_meta(bad)["api_status"] == 1
    assert r.stderr.count("\n") == 1 and r.stdout == ""
