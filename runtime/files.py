"""Reading files a stranger names: a bound on the bytes read, and every failure as a CVMError.

    data = read_bounded("input.bin", "input", limit=4096)     # at most 4096 bytes, else a CVMLogicError

A path may name a device or a FIFO that never ends (`/dev/zero`); reading stops one byte past the limit, so
memory stays bounded whatever the path is. An unreadable path (missing, a directory) is a CVMRuntimeError; a path
holding a NUL or a file longer than the limit is a CVMLogicError (the caller's input breaks a rule).
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from cvmc.errors import CVMLogicError, CVMRuntimeError

# The largest text or binary IR file the tools read (the `.mlir` and Task IR files): 1 GiB. Protobuf itself
# refuses messages of 2 GiB; xDSL's parser would need many times the text's size in memory.
MAX_FILE_BYTES = 1 << 30
_CHUNK = 1 << 20


def _read_at_most(f: BinaryIO, n: int) -> bytes:
    """Up to `n` bytes of `f`, read in chunks: `f.read(n)` would reserve all `n` bytes at once."""
    chunks: list[bytes] = []
    while n > 0:
        chunk = f.read(min(n, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_bounded(path: str | os.PathLike[str], what: str, limit: int | None = None,
                 why: str = "the limit") -> bytes:
    """The bytes of the file at `path`, at most `limit` of them (MAX_FILE_BYTES by default); `what` names the
    file in messages, `why` the reason for the limit."""
    limit = MAX_FILE_BYTES if limit is None else limit
    name = os.fspath(path) if isinstance(path, str | os.PathLike) else path
    if isinstance(name, str) and "\0" in name:  # the caller's fault, as `graph.read_source` has it
        raise CVMLogicError(f"cannot read {what} {name!r}: the path holds a NUL character")
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:  # refused before reading
                raise CVMLogicError(f"{what} {name!r} holds {st.st_size} bytes, more than {limit} ({why})")
            data = _read_at_most(f, limit + 1)
    except MemoryError:
        raise CVMRuntimeError(f"out of memory reading {what} {name!r}") from None
    except OSError as e:
        raise CVMRuntimeError(f"cannot read {what} {name!r}: {e.strerror or e}") from None
    except (ValueError, TypeError) as e:  # a path of the wrong type
        raise CVMRuntimeError(f"cannot read {what} {name!r}: {e}") from None
    if len(data) > limit:
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
