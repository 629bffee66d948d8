"""Coverage-guided fuzzing (atheris, libFuzzer) of every reader of a stranger's bytes:

    model   the graph JSON reader and its checks (`graph.parse_graph`), the params reader (`graph.read_params`),
            the whole load (`graph.load_graph`): the input's first byte picks one (0, 1, 2: 4 bytes of the JSON's
            length, the JSON, the params)
    task    the Task IR readers (`taskir_files.import_task`): text (first byte even) or protobuf (odd)
    mlir    the parser and verifier `cvm-opt` runs on a `.mlir` file (xDSL's, with cvmc's dialects)
    npy     the `.npy` reader of `cvm-run --batch` (`cvm_run.read_batch`)

    python tests/fuzz/readers.py --target model --seconds 60 [--work DIR]   # `make fuzz-long`: every target

The rule: every input ends in a result or in an error a tool reports as such (a CVMError, a parse error, a
verifier's diagnostic, an OSError: what `cli._status_of` does not call an "internal error"), never in another
exception. The seed corpus is the project's own files (tests/data, tests/filecheck) under each reader. A crash
leaves its input in the work folder (`crash-*`) and the run fails; each one found becomes a test (see
tests/runtime/test_fuzz_model_files.py). The last line reports executions, coverage (libFuzzer's `cov`: edges of
the instrumented cvmc modules and xDSL's parser) and crashes.
"""

from __future__ import annotations

import io
import os
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MAX_LEN = 1 << 16
_SCRATCH = Path(tempfile.gettempdir()) / f"cvmc-fuzz-{os.getpid()}"


# --------------------------------------------------------------------------------------------------------------
# Seeds
# --------------------------------------------------------------------------------------------------------------


def _model_seeds() -> list[bytes]:
    out = []
    for case in sorted((TESTS / "data" / "cvm").iterdir()):
        graph, params = case / "model.json", case / "params.bin"
        if graph.exists():
            g = graph.read_bytes()
            p = params.read_bytes() if params.exists() else b""
            out += [b"\0" + g, b"\1" + p, b"\2" + struct.pack("<I", len(g)) + g + p]
    return out


def _task_seeds() -> list[bytes]:
    from cvmc.runtime.frontend.taskir_files import load_message

    out = []
    for path in sorted((TESTS / "data" / "taskir").rglob("*.task.txt")):
        out += [b"\0" + path.read_bytes(), b"\1" + load_message(path).SerializeToString()]
    return out


def _mlir_seeds() -> list[bytes]:
    return [p.read_bytes() for p in sorted(TESTS.rglob("*.mlir"))]


def _npy_seeds() -> list[bytes]:
    import numpy as np

    out = []
    for a in (np.zeros((3, 64), np.int8), np.arange(12, dtype="<i4").reshape(2, 6), np.zeros((0, 4), np.int32),
              np.ones((2, 1, 8, 8), np.int16), np.array(5, np.int32), np.zeros(4, np.float32)):
        f = io.BytesIO()
        np.save(f, a)
        out.append(f.getvalue())
    return out


# --------------------------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------------------------


def _model(data: bytes) -> None:
    from cvmc.runtime.frontend import graph

    mode, body = data[0] % 3, data[1:]
    if mode == 0:
        graph.parse_graph(body)
    elif mode == 1:
        graph.read_params(body)
    else:
        n = int.from_bytes(body[:4].ljust(4, b"\0"), "little")
        graph.load_graph(body[4:4 + n], body[4 + n:])


def _scratch(name: str, data: bytes) -> Path:
    _SCRATCH.mkdir(exist_ok=True)
    path = _SCRATCH / name
    path.write_bytes(data)
    return path


def _task(data: bytes) -> None:
    from cvmc.runtime.frontend.taskir_files import import_task

    import_task(_scratch("input.task.txt" if data[0] % 2 == 0 else "input.task", data[1:]))


_CONTEXT = None


def _mlir(data: bytes) -> None:
    global _CONTEXT
    if _CONTEXT is None:
        from cvmc.tools import cli
        from cvmc.tools.cvm_opt import CvmOptMain

        _CONTEXT = CvmOptMain(args=["-f", "mlir"])
        cli.linear_mlir_lexer()  # as cvm-opt does before it parses
    module = _CONTEXT.parse_chunk(io.BytesIO(data), "mlir")
    if module is not None:
        module.verify()


def _npy(data: bytes) -> None:
    from cvmc.tools.cvm_run import read_batch

    xs = read_batch(str(_scratch("inputs.npy", data)))
    xs.sum()  # every byte of the mapped stack is there to be read


TARGETS: dict[str, tuple[Callable[[], list[bytes]], Callable[[bytes], None], list[str]]] = {
    "model": (_model_seeds, _model, ["cvmc.runtime.frontend.graph", "cvmc.dialects.cvm_rules"]),
    "task": (_task_seeds, _task, ["cvmc.runtime.frontend.taskir_files", "cvmc.dialects.taskgraph", "google.protobuf"]),
    "mlir": (_mlir_seeds, _mlir, ["cvmc.dialects", "xdsl.parser", "xdsl.utils.lexer"]),
    "npy": (_npy_seeds, _npy, ["cvmc.tools.cvm_run", "numpy.lib.format"]),
}


def one_input(target: str, data: bytes) -> None:
    """Run `target` on `data`; re-raise what a tool would call an internal error."""
    from cvmc.tools import cli

    if not data:
        return
    try:
        TARGETS[target][1](data)
    except Exception as e:
        if cli._status_of(e)[1].startswith("internal error"):  # pyright: ignore[reportPrivateUsage]
            raise


def fuzz(target: str, argv: list[str]) -> None:
    """Run under atheris (the libFuzzer flags and corpus folders in `argv`)."""
    import importlib

    import atheris

    with atheris.instrument_imports(include=TARGETS[target][2]):
        for name in TARGETS[target][2]:
            importlib.import_module(name)
    atheris.Setup([sys.argv[0], *argv], lambda data: one_input(target, data))
    atheris.Fuzz()


def campaign(target: str, seconds: int, work: Path, extra: list[str]) -> int:
    from libfuzzer import campaign as run

    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = [s for s in TARGETS[target][0]() if 0 < len(s) < MAX_LEN]
    for i, s in enumerate(seeds):
        (corpus / f"seed-{i}").write_bytes(s)
    return run(target, __file__, [target], work, seconds, MAX_LEN, extra, seeds=len(seeds))


def main(argv: list[str] | None = None) -> int:
    import libfuzzer

    return libfuzzer.main(__doc__, TARGETS, campaign, "", argv)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--run":
        fuzz(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(main())
