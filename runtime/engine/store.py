"""One authenticated store: the entry format and the file primitives behind the JIT's cache
(`cvmc.runtime.engine.cache`) and the AOT store (`cvmc.runtime.devices.aot`, read by `capi/store.c`).

    s = Store(folder, secret, bound, mode=0o600)            # the JIT's cache (cache.Cache) and the AOT store
    s.put("NAME.o", payload)                                # sealed, written atomically
    payload = s.get("NAME.o")                               # the payload, or why not (an `Unsealed`)

and beneath it, for other files: `seal`, `read_entry`, `write_file` (the library and its header use that one).

An entry is

    MAGIC || u64le(n) || head || tag || payload          (n = len(payload) > 0)
    head = HMAC-SHA256(secret, MAGIC || "head\\0" || name || "\\0" || u64le(n))
    tag  = HMAC-SHA256(secret, MAGIC || "body\\0" || name || "\\0" || u64le(n) || payload)

where `name` is the entry's file name (so an entry renamed to another name fails) and `secret` this user's key
(`cache.key`). The reader checks the head before it reads the payload: a file that claims more bytes than the
file holds, or than the caller's bound, or whose length was not written by the secret's holder, is refused after
reading its first 93 bytes (a planted sparse file of gigabytes costs nothing); the payload is then read in pieces
into one buffer, the tag computed as it goes.

Writes go through cvmc's one writer (`files.Writer`): a file created with O_EXCL (`mkstemp`: a name nobody
planted, mode 0600, no link followed) in the target folder; its mode is set and its bytes synced through the
descriptor, and only then is it renamed into place, never over a name that holds anything but a regular file.
After the rename the name must still be the file written (same device and inode): a temporary that another user
swapped for a link between the write and the rename is caught, and removed. Nothing is done to a temporary by its
path but the rename and the clean-up unlink.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from cvmc.runtime.frontend import files

MAGIC = b"cvmc-store-1\n"
TAG_BYTES = 32
HEADER_BYTES = len(MAGIC) + 8 + 2 * TAG_BYTES
_CHUNK = 1 << 20


class Unsealed(str):
    """Why an entry was not accepted (falsy tests still work: an `Unsealed` is never a payload)."""


def _mac(secret: bytes, part: bytes, name: str, n: int) -> hmac.HMAC:
    return hmac.new(secret, MAGIC + part + b"\0" + name.encode() + b"\0" + struct.pack("<Q", n), hashlib.sha256)


def seal(secret: bytes, name: str, payload: bytes) -> bytes:
    """The bytes of the entry `name` holding `payload` (non-empty)."""
    if not payload:
        raise ValueError("an entry holds at least one byte")
    n = len(payload)
    body = _mac(secret, b"body", name, n)
    body.update(payload)
    return MAGIC + struct.pack("<Q", n) + _mac(secret, b"head", name, n).digest() + body.digest() + payload


def read_entry(path: str | os.PathLike[str], secret: bytes, bound: int) -> bytes | Unsealed:
    """The payload of the entry at `path` (its name is its file name) when its head and tag check with `secret`
    and it holds at most `bound` payload bytes; else why not. Links are not followed; FIFOs and devices are not
    read (opened non-blocking, refused as not regular files). FileNotFoundError when there is no entry."""
    name = os.path.basename(path)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Unsealed("not a regular file")
        head = _read_exactly(fd, HEADER_BYTES)
        if head is None or not head.startswith(MAGIC):
            return Unsealed("not an entry of this format")
        (n,) = struct.unpack_from("<Q", head, len(MAGIC))
        if n == 0 or n > bound or HEADER_BYTES + n != st.st_size:
            return Unsealed(f"a length of {n} bytes in a file of {st.st_size} (at most {bound})")
        at = len(MAGIC) + 8
        if not hmac.compare_digest(head[at:at + TAG_BYTES], _mac(secret, b"head", name, n).digest()):
            return Unsealed("its head does not check with this user's key for this name: tagged under another key "
                            "(copy the key of the user who wrote it, in the folder `cvm-cache info` names, or rebuild "
                            "the entry) or written for another name (renamed)")
        body = _mac(secret, b"body", name, n)
        payload = bytearray(n)
        view, got = memoryview(payload), 0
        while got < n:
            r = os.readv(fd, [view[got:got + _CHUNK]])
            if r == 0:
                return Unsealed("it changed while read")
            body.update(view[got:got + r])
            got += r
        if not hmac.compare_digest(head[at + TAG_BYTES:], body.digest()):
            return Unsealed("its payload was not written with this user's key for this name: changed after it was "
                            "written (damaged; rebuild the entry)")
        return bytes(payload)
    finally:
        os.close(fd)


def _read_exactly(fd: int, n: int) -> bytes | None:
    out = b""
    while len(out) < n:
        piece = os.read(fd, n - len(out))
        if not piece:
            return None
        out += piece
    return out


def write_file(folder: str | os.PathLike[str], name: str, data: bytes, mode: int, sync: bool = True) -> Path:
    """Write `data` as `folder/name` with `mode`, atomically and, unless `sync` is False, synced (`files.Writer`,
    see the module docstring). OSError when it cannot (`files.UnsafeTarget`: the name holds a link, a FIFO, a
    folder or a device), or when the name no longer held the written file after the rename (then nothing of this
    writer's stays). `sync` False: a cache's entry, which a crash may leave short: it then fails its check."""
    writer = files.Writer(Path(folder) / name, mode, fsync=sync)
    try:
        writer.write(data)
    except BaseException:
        writer.abort()
        raise
    return Path(writer.commit())


@dataclass
class Store:
    """A folder of sealed entries: `get` and `put` by name, with this user's `secret`, payloads of at most
    `bound` bytes, files written with `mode`. The JIT's cache (`cvmc.runtime.engine.cache.Cache` holds one, and adds its
    folder's trust rules, names and size bound) and the AOT store (`cvmc.runtime.devices.aot`) are both one."""

    directory: Path
    secret: bytes
    bound: int
    mode: int = 0o600

    def get(self, name: str) -> bytes | Unsealed:
        """The payload of entry `name`, or why it is refused; FileNotFoundError when there is none, another
        OSError when it cannot be opened (a link)."""
        return read_entry(self.directory / name, self.secret, self.bound)

    def put(self, name: str, payload: bytes, sync: bool = True) -> Path:
        """Seal `payload` as entry `name` and write it atomically (`write_file`); OSError when it cannot."""
        if len(payload) > self.bound:
            raise ValueError(f"a payload of {len(payload)} bytes, more than the bound of {self.bound}")
        return write_file(self.directory, name, seal(self.secret, name, payload), self.mode, sync)
