"""`cvm-cache`: see and empty cvmc's on-disk cache of compiled code.

    cvm-cache info       # the folder, its entries and bytes, the size bound, the key's folder
    cvm-cache clear      # delete every entry (the secret key stays)

The folder is `$CVMC_CACHE_DIR`, else `$XDG_CACHE_HOME/cvmc`, else `~/.cache/cvmc` (see `cvmc.runtime.engine.cache`).
Exit status: 0; 1 when the folder cannot be used (not this user's alone, or no folder can be named): `clear`
then touches nothing, and `cvm-cache: CVMLogicError: ...` says why; 64 on a usage error; 141 when the reader closes
the output pipe (`cvm-cache info | head -0`).
"""

from __future__ import annotations

import argparse
import sys

from cvmc.errors import CVMLogicError
from cvmc.runtime.engine.cache import Cache, default_dir, key_dir, max_bytes, trust_problem
from cvmc.tools import cli


def _parser() -> argparse.ArgumentParser:
    p = cli.ArgumentParser(prog="cvm-cache", description="See and empty cvmc's cache of compiled code.")
    cli.add_common_arguments(p)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="the folder, its entries and bytes, the size bound")
    sub.add_parser("clear", help="delete every entry")
    return p


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} B"


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    cli.setup_logging(a)
    return cli.run_tool("cvm-cache", lambda: _run(a))


def _run(a: argparse.Namespace) -> int:
    folder = default_dir()
    if folder is None:
        raise CVMLogicError("no cache folder: no home directory and no $CVMC_CACHE_DIR")
    exists = folder.exists()
    problem = trust_problem(folder, create=False) if exists else None
    if a.command == "info":
        print(f"folder: {folder}" + ("" if exists else " (not created yet)"))
        if problem is not None:
            print(f"refused: {problem}; cvmc runs uncached")
            return 1
        info = Cache(folder, b"", max_bytes()).info() if exists else {"entries": 0, "bytes": 0}
        bound = max_bytes()
        print(f"entries: {info['entries']}")
        print(f"bytes: {info['bytes']} ({_size(int(info['bytes']))})")  # pyright: ignore[reportArgumentType]
        print(f"max bytes: {bound} ({_size(bound)})" if bound > 0 else "max bytes: 0 (the cache is off)")
        print(f"key folder: {key_dir(folder)}")
        return 0
    if problem is not None:
        raise CVMLogicError(f"{problem}; nothing deleted")
    if not exists:
        print(f"removed 0 entries (0 B) from {folder}")
        return 0
    store = Cache(folder, b"", max_bytes())
    before = store.info()
    removed = store.clear()
    print(f"removed {removed} entries ({_size(int(before['bytes']))}) from {folder}")  # pyright: ignore
    return 0


if __name__ == "__main__":
    sys.exit(main())
