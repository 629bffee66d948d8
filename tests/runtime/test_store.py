"""The one authenticated store (`cvmc.runtime.engine.store`) behind the JIT's cache and the AOT store: its format, its
reader's bounds, and its writer against another user of a shared folder (issue 30: F1, F2, F5, F14)."""

import os
import stat
import struct
import tempfile

import pytest

from cvmc.runtime.engine import cache, store
from cvmc.runtime.engine.store import HEADER_BYTES, MAGIC

SECRET = b"s" * 32
NAME = "a" * 64 + ".cvmc"


def test_a_sealed_entry_reads_back_and_binds_its_name_secret_and_bytes(tmp_path):
    data = store.seal(SECRET, NAME, b"payload")
    assert len(data) == HEADER_BYTES + 7 and data.startswith(MAGIC)
    store.write_file(tmp_path, NAME, data, 0o644)
    assert store.read_entry(tmp_path / NAME, SECRET, 7) == b"payload"
    assert isinstance(store.read_entry(tmp_path / NAME, SECRET, 6), store.Unsealed)  # the bound, one below
    assert "tagged under another key (copy the key" in store.read_entry(tmp_path / NAME, b"t" * 32, 7)
    other = "b" * 64 + ".cvmc"
    store.write_file(tmp_path, other, data, 0o644)  # renamed
    assert "written for another name (renamed)" in store.read_entry(tmp_path / other, SECRET, 7)
    flipped = bytearray(data)
    flipped[-1] ^= 1
    store.write_file(tmp_path, NAME, bytes(flipped), 0o644)
    assert "changed after it was written (damaged" in store.read_entry(tmp_path / NAME, SECRET, 7)
    with pytest.raises(ValueError):
        store.seal(SECRET, NAME, b"")


def test_a_planted_length_is_refused_before_its_payload_is_read(tmp_path, monkeypatch):
    """F5: a sparse entry of 3 GiB whose head claims its length: refused after its head, nothing more read (no
    3 GiB buffer, whatever the bound)."""
    path = tmp_path / NAME
    n = 3 << 30
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", n) + bytes(64))
        f.truncate(HEADER_BYTES + n)
    read = []
    real_read, real_readv = os.read, os.readv
    monkeypatch.setattr(os, "read", lambda fd, k: read.append(k) or real_read(fd, k))
    monkeypatch.setattr(os, "readv", lambda fd, b: read.append(sum(len(x) for x in b)) or real_readv(fd, b))
    why = store.read_entry(path, SECRET, 1 << 40)
    assert "head does not check" in why and sum(read) == HEADER_BYTES
    assert "a length of" in store.read_entry(path, SECRET, n - 1)  # past the bound: not even the tag computed


def test_lengths_that_disagree_with_the_file_are_refused(tmp_path):
    data = store.seal(SECRET, NAME, b"xyz")
    for cut in (data[:-1], data + b"!", data[:HEADER_BYTES - 1], b""):
        (tmp_path / NAME).write_bytes(cut)
        assert isinstance(store.read_entry(tmp_path / NAME, SECRET, 100), store.Unsealed)


def test_links_and_fifos_are_not_read(tmp_path):
    good = tmp_path / "good"
    good.write_bytes(store.seal(SECRET, NAME, b"xyz"))
    os.symlink(good, tmp_path / NAME)
    with pytest.raises(OSError):
        store.read_entry(tmp_path / NAME, SECRET, 100)
    os.unlink(tmp_path / NAME)
    os.mkfifo(tmp_path / NAME)  # no writer: opened non-blocking, refused without waiting
    assert store.read_entry(tmp_path / NAME, SECRET, 100) == "not a regular file"


def test_the_writer_creates_its_temporary_with_o_excl_never_through_a_planted_link(tmp_path):
    """F1: a link planted under any name the writer might use is never written through."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"theirs")
    victim.chmod(0o600)
    for name in ("out.so.tmp", ".out.so.tmp"):
        os.symlink(victim, tmp_path / name)
    path = store.write_file(tmp_path, "out.so", b"\x7fELF mine", 0o755)
    assert path.read_bytes() == b"\x7fELF mine" and not path.is_symlink()
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert victim.read_bytes() == b"theirs" and stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_temporary_swapped_for_a_link_changes_no_file_of_theirs(tmp_path, monkeypatch):
    """F2: another user of a 0777 store replaces the writer's temporary by a link to a file of their choosing
    (here `cache.key`) between its creation and its rename: the mode is set through the descriptor, so their file
    keeps its mode, and the link that the rename put in place is caught and removed."""
    victim = tmp_path / "cache.key"
    victim.write_bytes(b"k" * 32)
    victim.chmod(0o600)
    real = tempfile.mkstemp

    def swapped(*args, **kwargs):
        fd, tmp = real(*args, **kwargs)
        os.rename(tmp, tmp + ".moved")  # the writer's descriptor still holds the file
        os.symlink(victim, tmp)
        return fd, tmp

    monkeypatch.setattr(tempfile, "mkstemp", swapped)
    with pytest.raises(OSError, match="replaced while it was written"):
        store.write_file(tmp_path, NAME, store.seal(SECRET, NAME, b"xyz"), 0o644)
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600 and victim.read_bytes() == b"k" * 32
    assert not os.path.lexists(tmp_path / NAME)


def test_an_empty_home_is_unset_not_the_root(monkeypatch):
    """F14: HOME="" is taken as unset (the password entry's home), never as `/`."""
    for name in ("CVMC_CACHE_DIR", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "")
    folder = cache.default_dir()
    assert folder is None or str(folder) not in ("/.cache/cvmc",) and not str(folder).startswith("/.")
    import pwd

    home = pwd.getpwuid(os.geteuid()).pw_dir
    if os.path.isabs(home) and home != "/":
        assert str(folder) == os.path.join(home, ".cache", "cvmc")
