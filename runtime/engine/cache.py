"""The on-disk cache of compiled code: where it lives, what it trusts, how large it grows.

    store = open_cache()                       # None: no usable cache folder (the run goes on uncached)
    code = store.get(name, "o")                # the bytes cvmc stored under `name`, or None
    store.put(name, "o", code)                 # atomic; evicts the least recently used entries past the bound

What is cached: machine code (the JIT's shared objects, kind "so", or object files, kind "o"; NVRTC's cubins),
LLVM's answer about this machine (kind "host", `runtime.driver.target.host_target`) and, for the cpu device, a compiled
model (kind "model", `runtime.engine.compiled`: its host program, kernel specs and packed parameters, naming its code),
so that a warm load lowers nothing and imports no compiler. The program steers where kernels read and write, so it is
trusted exactly as the code is: only when cvmc wrote it, for this key, on this account; and the runner checks
every kernel's arrays against its spec (`kernel_args`) whichever way the program came:

- The folder is `$CVMC_CACHE_DIR`, else `$XDG_CACHE_HOME/cvmc`, else `~/.cache/cvmc`. It is created 0700; one that
  is not a folder owned by this user, or that group or others may write, is refused with one `CacheWarning`, and
  the run goes on uncached (as ssh and pip do). No home, or a folder that cannot be written, only costs time.
- Every entry is sealed as `cvmc.runtime.engine.store` seals it (the format the AOT store shares): a length, a tag of
  the head and one of the payload, keyed by a secret of this user (`cache.key`, 32 random bytes, created 0600
  with O_EXCL in `$XDG_STATE_HOME/cvmc`, else `~/.local/state/cvmc`, else, without a home, in the cache folder
  itself) and covering the entry's name (its digest and kind), its length and its payload: a file
  planted or edited by anyone without the secret, a truncated one, or another entry renamed to this name fails
  the check, is deleted, and the code is compiled again. Names are digests of everything the code depends on
  (the IR or source, the compiler's versions, the target CPU and its features), made by the callers.
- The folder holds at most `$CVMC_CACHE_MAX_BYTES` bytes of entries (`K`, `M`, `G` suffixes; 0 turns the cache
  off; default 512M). Past it, the least recently used entries are deleted (a hit refreshes an entry's time).
- Writes go to a temporary file renamed into place (`store.write_file`), so processes sharing the folder never see
  half an entry. They are not synced to disk (an fsync an entry would slow every cold process): an
  entry a crash leaves short or empty fails its check and is compiled again.

`tools/cvm_cache.py` (`cvm-cache info|clear`) shows and empties the folder.
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from pathlib import Path

from cvmc.runtime.engine import store
from cvmc.runtime.frontend import files

ENV_DIR = "CVMC_CACHE_DIR"
ENV_MAX_BYTES = "CVMC_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 512 << 20
KEY_FILE = "cache.key"
KEY_BYTES = 32
_ENTRY = re.compile(r"^[0-9a-f]{64}\.(o|so|cubin|ptx|model|host)$")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# Temporary files of writers that died are removed by eviction and `clear` once they are this old (seconds).
_STALE_TMP = files.STALE_TEMPORARY_SECONDS


class CacheWarning(UserWarning):
    """The cache is off for this run (a folder or key that cannot be trusted or written); nothing else changes."""


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, CacheWarning, stacklevel=3)


# --------------------------------------------------------------------------------------------------------------
# Where
# --------------------------------------------------------------------------------------------------------------


def _home() -> Path | None:
    """$HOME when set and not empty (an empty one is taken as unset, not as `/`), else the password entry's."""
    home = os.environ.get("HOME") or None
    if home is None:
        try:
            import pwd

            home = pwd.getpwuid(os.geteuid()).pw_dir
        except (ImportError, KeyError):
            return None
    return Path(home) if os.path.isabs(home) else None


def _xdg(variable: str, fallback: str) -> Path | None:
    """`$variable` when it is an absolute path (the XDG rule), else `~/fallback`; None without a home."""
    value = os.environ.get(variable, "")
    if os.path.isabs(value):
        return Path(value)
    home = _home()
    return home / fallback if home is not None else None


def default_dir() -> Path | None:
    """The cache folder this process uses: `$CVMC_CACHE_DIR`, else `$XDG_CACHE_HOME/cvmc`, else `~/.cache/cvmc`
    (None when none can be named: no home)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    base = _xdg("XDG_CACHE_HOME", ".cache")
    return base / "cvmc" if base is not None else None


def key_dir(cache_dir: Path) -> Path:
    """The folder of the secret key: `$XDG_STATE_HOME/cvmc`, else `~/.local/state/cvmc`, else `cache_dir`."""
    base = _xdg("XDG_STATE_HOME", ".local/state")
    return base / "cvmc" if base is not None else cache_dir


def max_bytes() -> int:
    """`$CVMC_CACHE_MAX_BYTES` (an integer with an optional K, M or G suffix), else `DEFAULT_MAX_BYTES`."""
    text = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    match = re.fullmatch(r"(\d+)\s*([KMG]?)(?:i?B)?", text, re.IGNORECASE)
    if match is None:
        _warn_once(f"{ENV_MAX_BYTES}: expected a number of bytes like 512M, got {text!r}; using "
                   f"{DEFAULT_MAX_BYTES >> 20}M")  # fmt: skip
        return DEFAULT_MAX_BYTES
    return int(match[1]) * _UNITS[match[2].upper()]


def trust_problem(path: Path, what: str = "cache folder", create: bool = True) -> str | None:
    """None when `path` is a folder of this user's alone (created 0700 if missing and `create`), else why it is
    refused."""
    try:
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(path)
    except OSError as e:
        return f"the {what} {path} cannot be created: {e.strerror or e}"
    if not stat.S_ISDIR(st.st_mode):
        return f"the {what} {path} is not a folder"
    if st.st_uid != os.geteuid():
        return f"the {what} {path} is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"the {what} {path} has mode {stat.S_IMODE(st.st_mode):04o}: group or others may write it"
    return None


def _read_key(path: Path) -> bytes | str:
    """The secret in `path` (bytes), or why it cannot be used (str); FileNotFoundError when there is none."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return f"the cache key {path} must be a file of this user that only this user can read"
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        return f"the cache key {path} holds {len(data)} bytes, expected {KEY_BYTES}"
    return data


def _secret(directory: Path) -> bytes | str:
    """This user's secret key in `directory`, made on first use: 0600, created with O_EXCL under a temporary name
    and linked into place (so concurrent first uses agree on one key and no reader sees it half written)."""
    path = directory / KEY_FILE
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        return f"the cache key {path} cannot be read: {e.strerror or e}"
    import secrets

    tmp = directory / f"{files.TEMP_PREFIX}{KEY_FILE}.{secrets.token_hex(8)}{files.TEMP_SUFFIX}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
        return _read_key(path)
    except OSError as e:
        return f"the cache key {path} cannot be created: {e.strerror or e}"


def user_secret(directory: Path) -> bytes | str:
    """This user's secret key in `directory` (made on first use), or why it cannot be used: a folder that is not
    this user's alone, or a key file that is not this user's, not 0600, or not 32 bytes. `cvm-aot` tags its store's
    entries with the same key (`cvmc.runtime.devices.aot`)."""
    why = trust_problem(directory, "cache key folder")
    return why if why is not None else _secret(directory)


# --------------------------------------------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------------------------------------------


class Cache:
    """A trusted cache folder (see the module docstring): a `store.Store` of entries named by a digest and a kind,
    private to this user (0600), whose total size `evict` keeps within `max_bytes`."""

    def __init__(self, directory: Path, secret: bytes, max_bytes: int):
        self.directory, self.secret, self.max_bytes = directory, secret, max_bytes
        self.store = store.Store(directory, secret, max(max_bytes - store.HEADER_BYTES, 0), 0o600)

    def _path(self, name: str, kind: str) -> Path:
        path = self.directory / f"{name}.{kind}"
        if not _ENTRY.match(path.name):
            raise ValueError(f"a cache entry is named by a SHA-256 hex digest and a kind, got {path.name!r}")
        return path

    def get(self, name: str, kind: str) -> bytes | None:
        """The payload stored under `name` and `kind` by cvmc on this account, or None. An entry that is not a
        regular file, is larger than the bound, or fails the HMAC check (`store.read_entry`) is deleted."""
        path = self._path(name, kind)
        try:
            payload = self.store.get(path.name)
        except FileNotFoundError:
            return None
        except OSError:  # a link, no permission: not ours
            payload = store.Unsealed("unreadable")
        if isinstance(payload, store.Unsealed):
            self._remove(path)  # a folder too: it would block the rewrite
            return None
        try:
            os.utime(path)  # last use, for the eviction order
        except OSError:
            pass
        return payload

    def put(self, name: str, kind: str, payload: bytes) -> None:
        """Store `payload` (atomically, `store.write_file`), then evict the least recently used entries past the
        size bound. Errors only cost time: the cache is optional."""
        path = self._path(name, kind)
        if not 0 < len(payload) <= self.store.bound:  # an empty entry is never read back either
            return
        try:
            self.store.put(path.name, payload, sync=False)  # a torn entry fails its check: no fsync
        except OSError as e:
            _warn_once(f"cvmc cache: cannot write in {self.directory} ({e.strerror or e}); running uncached")
            return
        self.evict(keep=path)

    def _drop(self, path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass

    def entries(self) -> list[tuple[Path, os.stat_result]]:
        """Every entry (named like one; a link or a folder counts too, so that eviction and `clear` remove it)."""
        out = []
        try:
            with os.scandir(self.directory) as it:
                for e in it:
                    if _ENTRY.match(e.name):
                        try:
                            out.append((Path(e.path), e.stat(follow_symlinks=False)))
                        except OSError:
                            pass
        except OSError:
            pass
        return out

    def evict(self, keep: Path | None = None) -> int:
        """Delete the least recently used entries until the rest fit the bound; returns how many went."""
        entries = self.entries()
        total = sum(st.st_size for _, st in entries)
        removed = 0
        for path, st in sorted(entries, key=lambda e: (e[1].st_mtime_ns, e[0].name)):
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            self._remove(path)
            total -= st.st_size
            removed += 1
        self._remove_stale_temporaries()
        return removed

    def _remove(self, path: Path) -> None:
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path, ignore_errors=True)
        else:
            self._drop(path)

    def _remove_stale_temporaries(self, age: float = _STALE_TMP) -> None:
        files.sweep_temporaries(self.directory, age)

    def info(self) -> dict[str, object]:
        entries = self.entries()
        return {"folder": str(self.directory), "entries": len(entries),
                "bytes": sum(st.st_size for _, st in entries), "max_bytes": self.max_bytes}  # fmt: skip

    def clear(self) -> int:
        """Delete every entry (and temporaries of writers that died); returns the number of entries deleted."""
        entries = self.entries()
        for path, _ in entries:
            self._remove(path)
        self._remove_stale_temporaries(age=60)
        return len(entries)


def open_cache(directory: str | os.PathLike[str] | None = None) -> Cache | None:
    """The cache in `directory` (default: `default_dir()`) if it can be trusted, else None after one
    `CacheWarning` naming the reason. Cheap: a few `stat` calls; the key is read once per process and folder."""
    bound = max_bytes()
    if bound <= 0:
        return None
    path = Path(directory) if directory is not None else default_dir()
    if path is None:
        _warn_once(f"cvmc cache: no folder for it (no home directory and no ${ENV_DIR}); running uncached")
        return None
    path = Path(os.path.abspath(path))
    why = trust_problem(path)
    if why is not None:
        _warn_once(f"cvmc cache: {why}; running uncached")
        return None
    keys = key_dir(path)
    secret = _SECRETS.get(keys)
    if secret is None:
        why = None if keys == path else trust_problem(keys, "cache key folder")
        secret = why if why is not None else _secret(keys)
        if isinstance(secret, bytes):
            _SECRETS[keys] = secret
    if isinstance(secret, str):
        _warn_once(f"cvmc cache: {secret}; running uncached")
        return None
    return Cache(path, secret, bound)


_SECRETS: dict[Path, bytes] = {}
