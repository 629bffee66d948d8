"""Coverage-guided fuzzing (atheris, libFuzzer) of the model readers: the graph JSON reader and its checks
(`graph.parse_graph`), the params reader (`graph.read_params`) and the whole load (`graph.load_graph`).

    python tests/fuzz/model_files.py --seconds 60 [--work DIR]    # `make fuzz-long` (60 s); `make test`: 10 s

The rule under test: every input ends in the model or a CVMError, never another exception (an IndexError, a
RecursionError, a MemoryError...). An input's first byte picks the reader: 0 the graph JSON, 1 the params, 2 both
(4 bytes of the JSON's length, the JSON, the params). The seed corpus is every corpus case of tests/data/cvm of at
most 64 KiB, under each reader. A crash leaves its input in the work folder (`crash-*`) and the run fails; each
one found becomes a test in tests/runtime/test_fuzz_model_files.py. The last line reports the executions, the
coverage (libFuzzer's `cov`, edges of the instrumented cvmc.runtime.graph) and the corpus.
"""

from __future__ import annotations

import argparse
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "data" / "cvm"
MAX_LEN = 1 << 16


def seeds(folder: Path) -> int:
    """Write the seed corpus into `folder`; how many seeds."""
    n = 0
    for case in sorted(CORPUS.iterdir()):
        graph, params = case / "model.json", case / "params.bin"
        if not graph.exists():
            continue
        g = graph.read_bytes()
        p = params.read_bytes() if params.exists() else b""
        for mode, data in ((0, g), (1, p), (2, struct.pack("<I", len(g)) + g + p)):
            if 0 < len(data) < MAX_LEN:
                (folder / f"{case.name}-{mode}").write_bytes(bytes([mode]) + data)
                n += 1
    return n


def one_input(data: bytes) -> None:
    from cvmc.errors import CVMError
    from cvmc.runtime import graph

    if not data:
        return
    mode, body = data[0] % 3, data[1:]
    try:
        if mode == 0:
            graph.parse_graph(body)
        elif mode == 1:
            graph.read_params(body)
        else:
            n = int.from_bytes(body[:4].ljust(4, b"\0"), "little")
            graph.load_graph(body[4:4 + n], body[4 + n:])
    except CVMError:
        pass


def fuzz(argv: list[str]) -> None:
    """Run under atheris (the libFuzzer flags and corpus folders in `argv`)."""
    import atheris

    with atheris.instrument_imports(include=["cvmc.runtime.graph", "cvmc.dialects.cvm_rules"]):
        import cvmc.dialects.cvm_rules
        import cvmc.runtime.graph  # noqa: F401
    atheris.Setup([sys.argv[0], *argv], one_input)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=int, default=60, help="how long to fuzz (default 60)")
    p.add_argument("--work", help="the folder of the corpus and any crash (default: a temporary one)")
    p.add_argument("--libfuzzer", nargs=argparse.REMAINDER, default=[], help="libFuzzer's flags, as they are")
    a = p.parse_args(argv)
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("fuzz model files: atheris is not installed (pip install -e '.[dev]' on Linux x86-64); skipped")
        return 0
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="cvmc-fuzz-"))
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    n = seeds(corpus)
    flags = [f"-max_total_time={a.seconds}", f"-max_len={MAX_LEN}", "-rss_limit_mb=4096", "-timeout=20",
             f"-artifact_prefix={work}/", "-print_final_stats=1", *a.libfuzzer, str(corpus)]
    r = subprocess.run([sys.executable, __file__, "--run", *flags], capture_output=True, text=True)
    done = [line for line in r.stderr.splitlines() if re.match(r"#\d+\s+DONE", line)]
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", r.stderr)
    crashes = sorted(str(c) for c in work.glob("crash-*")) + sorted(str(c) for c in work.glob("timeout-*"))
    print(f"fuzz model files: {n} seeds, {runs[1] if runs else '?'} executions in {a.seconds} s; "
          f"{done[-1] if done else 'no final line'}; {len(crashes)} crashes {crashes}")
    if r.returncode != 0:
        print(r.stderr[-6000:])
    return r.returncode


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--run":
        fuzz(sys.argv[2:])
    else:
        sys.exit(main())
