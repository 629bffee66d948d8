"""cvm-aot build (issue 39): swapped files are a usage error and store nothing (they were stored as "rejected with
status 2" entries, status 0); a model folder builds as its two files."""

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
