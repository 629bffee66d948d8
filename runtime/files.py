"""Reading files a stranger names: a bound on the bytes read, and every failure as a CVMError.

    data = read_bounded("input.bin", "input", limit=4096)     # at most 4096 bytes, else a CVMLogicError

A path may name a device or a FIFO that never ends (`/dev/zero`); reading stops one byte past the limit, so
memory stays bounded whatever the path is (at the limit: a stream's chunks are joined only when they fit), and a
FIFO is opened without blocking, and refused when no process writes to it (or closes it) within
`FIFO_WAIT_SECONDS`, instead of holding the tool for ever. An unreadable path (missing, a directory) is a
CVMRuntimeError; a path holding a NUL or a file longer than the limit is a CVMLogicError (the caller's input breaks
a rule).
"""

from __future__ import annotations

import io
import os
import stat

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
