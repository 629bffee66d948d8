"""Reading files a stranger names: a bound on the bytes read, and every failure as a CVMError; and the one writer
of every file cvmc writes (see "writing" below).

    data = read_bounded("input.bin", "input", limit=4096)     # at most 4096 bytes, else a CVMLogicError
    write_file("out.bin", data, "the output")                  # beside it, renamed into place; never over a link

A path may name a device or a FIFO that never ends (`/dev/zero`); reading stops one byte past the limit, so
memory stays bounded whatever the path is (at the limit: a stream's chunks are joined only when they fit), and a
FIFO is opened without blocking, and refused when no process writes to it (or closes it) within
`FIFO_WAIT_SECONDS`, instead of holding the tool for ever. An unreadable path (missing, a directory) is a
CVMRuntimeError; a path holding a NUL or a file longer than the limit is a CVMLogicError (the caller's input breaks
a rule).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Iterator

from cvmc.errors import CVMLogicError, CVMRuntimeError

# The largest text or binary IR file the tools read (the `.mlir` and Task IR files): 1 GiB. Protobuf itself
# refuses messages of 2 GiB; xDSL's parser would need many times the text's size in memory.
MAX_FILE_BYTES = 1 << 30
_CHUNK = 1 << 20
# How long a FIFO or pipe may stay without data or a hang-up before it is refused (seconds).
FIFO_WAIT_SECONDS = 30.0


def _wait_for_writer(fd: int) -> bool:
    """Whether a FIFO or pipe open on `fd` gets data or a hang-up within FIFO_WAIT_SECONDS (a FIFO that no process
    opens for writing would hold a blocking open or read for ever)."""
    import select

    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(int(FIFO_WAIT_SECONDS * 1000)))


def _read_at_most(fd: int, n: int, regular: bool) -> bytes | None:
    """The bytes of the descriptor `fd` when there are fewer than `n`, else None. A regular file (its size known
    to be below `n`) is read whole into one buffer; a stream is read in chunks, dropped as soon as they reach `n`
    bytes: chunks are joined only when they fit, so memory peaks at the limit, not twice it."""
    if regular:
        data = io.FileIO(fd, closefd=False).readall()
        return data if len(data) < n else None
    chunks: list[bytes] = []
    total = 0
    while total < n:
        chunk = os.read(fd, min(n - total, _CHUNK))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    return None


def read_bounded(path: str | os.PathLike[str], what: str, limit: int | None = None,
                 why: str = "the limit") -> bytes:
    """The bytes of the file at `path`, at most `limit` of them (MAX_FILE_BYTES by default); `what` names the
    file in messages, `why` the reason for the limit."""
    limit = MAX_FILE_BYTES if limit is None else limit
    name = os.fspath(path) if isinstance(path, str | os.PathLike) else path
    if isinstance(name, str) and "\0" in name:  # the caller's fault, as `graph.read_source` has it
        raise CVMLogicError(f"cannot read {what} {name!r}: the path holds a NUL character")
    try:
        # Opened without blocking (a FIFO with no writer would hold the open for ever), then read blocking: a
        # pipe's writer is waited for; a FIFO nobody writes reads as empty.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if stat.S_ISFIFO(st.st_mode) and not _wait_for_writer(fd):
                raise CVMRuntimeError(f"cannot read {what} {name!r}: a FIFO no process wrote to or closed within "
                                      f"{FIFO_WAIT_SECONDS:g} s")
            os.set_blocking(fd, True)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(21, "Is a directory")
            regular = stat.S_ISREG(st.st_mode)
            if regular and st.st_size > limit:  # refused before reading
                raise CVMLogicError(f"{what} {name!r} holds {st.st_size} bytes, more than {limit} ({why})")
            data = _read_at_most(fd, limit + 1, regular)
        finally:
            os.close(fd)
    except MemoryError:
        raise CVMRuntimeError(f"out of memory reading {what} {name!r}") from None
    except OSError as e:
        raise CVMRuntimeError(f"cannot read {what} {name!r}: {e.strerror or e}") from None
    except (ValueError, TypeError) as e:  # a path of the wrong type
        raise CVMRuntimeError(f"cannot read {what} {name!r}: {e}") from None
    if data is None:
        raise CVMLogicError(f"{what} {name!r} holds more than {limit} bytes ({why})")
    return data


def read_text(path: str | os.PathLike[str], what: str, limit: int | None = None) -> str:
    """The UTF-8 text of the file at `path`, at most `limit` bytes of it."""
    data = read_bounded(path, what, limit)
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise CVMRuntimeError(f"cannot read {what} {os.fspath(path)!r}: not UTF-8 text ({e.reason} at byte "
                              f"{e.start})") from None


# ---- writing ---------------------------------------------------------------------------------------------------
#
# Every file cvmc writes (store entries, `cvm-aot lib` and its header, model files, `-o` of every tool, reports,
# --dump folders) goes through one writer:
#
#     write_file("out.bin", data, "the output")                   # bytes or str, in one call
#     with writing_text("out.mlir", "the output") as f:           # streamed; in place only when the block ends well
#         f.write(...)
#
# The bytes go to a temporary of this writer's own in the target's folder (`mkstemp`: O_EXCL, O_NOFOLLOW, mode
# 0600, named TEMP_PREFIX...TEMP_SUFFIX), its mode is then set through the descriptor (`mode`, else what `open`
# would give: 0666 less the umask) and, where asked, its bytes synced; only then is it renamed over the target.
# An existing target that is not a regular file is refused, never replaced nor written through: a symbolic link
# (its target stays as it was), a FIFO (no open that could block), a directory, a device (`-o /dev/full` stays
# the device). After the rename the name must hold the very file written (opened with O_NOFOLLOW, same device
# and inode): a temporary swapped for a link in between is caught and removed. Every OS error (ENOSPC, EFBIG
# under `ulimit -f`, EACCES, EROFS) is one line naming the file, a CVMRuntimeError (tools exit with status 2).
# A writer that dies leaves its temporary; `sweep_temporaries` removes those of a folder (the JIT's cache and the
# AOT store call it) once they are old enough that no live writer owns them.

TEMP_PREFIX = ".cvmc-"
TEMP_SUFFIX = ".tmp"
# Temporaries of writers that died are swept once they are this old (seconds): no write takes an hour.
STALE_TEMPORARY_SECONDS = 3600


class UnsafeTarget(OSError):
    """The target exists and is not a regular file (a link, a FIFO, a directory, a device): never replaced."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_target(path: str | os.PathLike[str]) -> None:
    """UnsafeTarget when `path` exists and is not a regular file (its own kind, links not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeTarget(errno.EEXIST, f"it is {_kind(st.st_mode)}, not a regular file; cvmc replaces only regular "
                           "files", os.fspath(path))


def _umask_mode() -> int:
    """0666 less this process's umask: the mode `open(path, "w")` gives a new file."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:  # read without changing it (thread-safe)
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class Writer:
    """A file being written to a temporary beside `path` (see above); `commit` puts it in place, `abort` drops
    it. Raw: OSError (UnsafeTarget for a target that is not a regular file), for callers to word; `writing` and
    `write_file` give CVMRuntimeErrors."""

    def __init__(self, path: str | os.PathLike[str], mode: int | None = None, fsync: bool = False):
        self.path = os.fspath(path)
        if "\0" in self.path:
            raise ValueError("the path holds a NUL character")
        self.mode, self.fsync = (_umask_mode() if mode is None else mode), fsync
        check_target(self.path)
        import tempfile

        self.fd, self.tmp = tempfile.mkstemp(dir=os.path.dirname(self.path) or ".", prefix=TEMP_PREFIX,
                                             suffix=TEMP_SUFFIX)
        self.file: io.BufferedWriter | None = io.BufferedWriter(io.FileIO(self.fd, "w", closefd=False))

    def write(self, data: bytes | bytearray | memoryview) -> int:
        assert self.file is not None, "written after commit or abort"
        return self.file.write(data)

    def commit(self) -> str:
        """Sync (where asked), rename over the target, check that the name holds what was written."""
        assert self.file is not None, "committed twice"
        try:
            # closed (flushed) while the descriptor is ours: a stream left over it can never write to a later file
            # that reuses the descriptor's number
            file, self.file = self.file, None
            file.close()
            os.fchmod(self.fd, self.mode)
            if self.fsync:
                os.fsync(self.fd)
            mine = os.fstat(self.fd)
            check_target(self.path)  # again, just before: what appeared since is not replaced either
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise
        os.close(self.fd)
        self.fd = -1
        try:
            placed = os.open(self.path, getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW
                             | os.O_CLOEXEC)
            try:
                st = os.fstat(placed)
            finally:
                os.close(placed)
            ours = (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
        except OSError:  # ELOOP: a link now stands under the name
            ours = False
        if not ours:
            try:
                os.unlink(self.path)  # what another user put under our temporary's name: not ours to leave there
            except OSError:
                pass
            raise OSError(errno.EAGAIN, "the temporary file was replaced while it was written", self.path)
        return self.path

    def abort(self) -> None:
        file, self.file = self.file, None
        if file is not None:
            try:
                file.close()  # what it holds goes to the temporary, dropped below (see `commit`)
            except (OSError, ValueError):
                pass
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            try:
                os.unlink(self.tmp)
            except OSError:
                pass


def write_error(what: str, path: str | os.PathLike[str], e: BaseException) -> CVMRuntimeError:
    """The one-line error of a write of `what` at `path` that failed with `e`."""
    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    if isinstance(e, OSError) and e.errno == errno.EFBIG:
        reason += " (the file size limit, `ulimit -f`)"
    return CVMRuntimeError(f"cannot write {what} {os.fspath(path)!r}: {reason}")


@contextlib.contextmanager
def _committed(path: str | os.PathLike[str], what: str, mode: int | None, fsync: bool) -> Iterator[Writer]:
    """A Writer of `path`, committed when the block ends well, else aborted; OS errors as CVMRuntimeErrors."""
    try:
        writer = Writer(path, mode, fsync)
    except (OSError, ValueError) as e:
        raise write_error(what, path, e) from None
    try:
        yield writer
    except OSError as e:  # a write in the block failed
        writer.abort()
        raise write_error(what, path, e) from None
    except BaseException:
        writer.abort()
        raise
    try:
        writer.commit()
    except OSError as e:
        raise write_error(what, path, e) from None


@contextlib.contextmanager
def writing(path: str | os.PathLike[str], what: str, *, mode: int | None = None,
            fsync: bool = False) -> Iterator[io.BufferedWriter]:
    """A binary file to write `path` through (`what` names it in errors), put in place when the block ends
    without an error (see above). Seekable: numpy's savez writes a zip into it."""
    with _committed(path, what, mode, fsync) as writer:
        assert writer.file is not None
        yield writer.file


@contextlib.contextmanager
def writing_text(path: str | os.PathLike[str], what: str, *, mode: int | None = None,
                 fsync: bool = False) -> Iterator[io.TextIOWrapper]:
    """`writing` as a UTF-8 text stream ("\\n" line ends)."""
    with _committed(path, what, mode, fsync) as writer:
        assert writer.file is not None
        stream = io.TextIOWrapper(writer.file, encoding="utf-8", newline="\n")
        yield stream
        if not stream.closed:  # closing it flushed it
            stream.flush()


def write_file(path: str | os.PathLike[str], data: bytes | str, what: str, *, mode: int | None = None,
               fsync: bool = False) -> str:
    """Write `data` (str: as UTF-8) as the file `path` (see above); `what` names it in errors."""
    with writing(path, what, mode=mode, fsync=fsync) as f:
        f.write(data.encode() if isinstance(data, str) else data)
    return os.fspath(path)


def sweep_temporaries(folder: str | os.PathLike[str], age: float = STALE_TEMPORARY_SECONDS) -> None:
    """Remove the writers' temporaries in `folder` at least `age` seconds old (of writers that died); the JIT's
    cache and the AOT store call it. Links are removed, never followed."""
    import glob
    import time

    now = time.time()
    for tmp in glob.glob(os.path.join(glob.escape(os.fspath(folder)), f"{TEMP_PREFIX}*{TEMP_SUFFIX}")):
        try:
            if now - os.lstat(tmp).st_mtime >= age:
                os.unlink(tmp)
        except OSError:
            pass
