"""cvm-aot build (issue 39): swapped files are a usage error and store nothing (they were stored as "rejected with
status 2" entries, status 0); a model folder builds as its two files."""

import pytest
from conftest import Terminal

import cvmc.examples
from cvmc.tools import cvm_aot

DIGITS = cvmc.examples.digits()


def test_swapped_files_store_nothing(tmp_path, capsys):
    store = tmp_path / "store"
    assert cvm_aot.main(["build", str(DIGITS.params), str(DIGITS.graph), "--store", str(store)]) == 64
    assert "the files are swapped: cvm-aot build model.json params.bin" in capsys.readouterr().err
    assert not store.exists()


def test_a_folder_builds_as_its_two_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert cvm_aot.main(["build", str(DIGITS.folder), "--store", str(tmp_path / "a")]) == 0
    by_folder = capsys.readouterr().out
    assert cvm_aot.main(["build", str(DIGITS.graph), str(DIGITS.params), "--store", str(tmp_path / "b")]) == 0
    by_files = capsys.readouterr().out
    assert by_folder.replace(str(tmp_path / "a"), "S") == by_files.replace(str(tmp_path / "b"), "S")
    assert "rejected" not in by_folder and sorted(p.name for p in (tmp_path / "a").iterdir()) == \
        sorted(p.name for p in (tmp_path / "b").iterdir())


@pytest.mark.parametrize("tty", [True, False])
def test_several_folders_build_with_a_bar_on_a_terminal_only(tmp_path, capsys, monkeypatch, tty):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    err = Terminal(tty)
    monkeypatch.setattr("sys.stderr", err)
    cnn = cvmc.examples.digits_cnn()
    assert cvm_aot.main(["build", str(DIGITS.folder), str(cnn.folder), "--store", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and [line.split(": ")[1].split()[0] for line in out] == ["model", "graph", "model", "graph"]
    assert len(list((tmp_path / "s").rglob("*.cvmc"))) == 4
    text = err.getvalue()
    if not tty:
        assert text == ""
        return
    assert text == ("\rcvm-aot build [....................]   0% 0/2 models\r\x1b[K"
                    "\rcvm-aot build [##########..........]  50% 1/2 models\r\x1b[K"
                    "\rcvm-aot build [####################] 100% 2/2 models\n")


def test_a_folder_with_a_file_is_a_usage_error(tmp_path, capsys):
    assert cvm_aot.main(["build", str(DIGITS.folder), str(DIGITS.params), "--store", str(tmp_path / "s")]) == 64
    assert "expected model folders, or model.json then params.bin, got" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
