"""`cvm-task`: run a Task IR graph.

    cvm-task run lenet.task.txt i_0_0_0.dat          # prints the OUTPUT blocks' values, one per line
    cvm-task run cc.task.txt                         # a graph without INPUT blocks needs no input
    cvm-task run snn.task --steps 4 frames.dat       # 4 steps: one frame for all, or one per step
    cvm-task run lenet.task.txt i_0_0_0.dat --device cpu   # through the CPU JIT

GRAPH is a `.task` (binary), `.task.txt` (text) or `.mlir` file. INPUT is raw little-endian int32: the
INPUT blocks' values in file order, (y, x, f) row-major. Each step prints every OUTPUT block (file
order), one integer per line. Exit status: 0, 1 on a logic error (a bad graph or input), 2 on a
runtime error (an unreadable file, an internal failure); the message goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError


def load_graph_module(path: str):
    """A verified module holding the graph of a `.task`, `.task.txt` or `.mlir` file."""
    from cvmc.runtime.taskir_files import import_task, verify_graph

    if not path.endswith(".mlir"):
        return import_task(path)
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from cvmc.dialects.taskgraph import TaskGraph

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(TaskGraph)
    try:
        with open(path, encoding="utf-8") as f:
            module = Parser(ctx, f.read(), path).parse_module()
    except OSError as e:
        raise CVMRuntimeError(f"cannot read {path!r}: {e.strerror}") from e
    except ParseError as e:
        raise CVMRuntimeError(f"cannot parse {path!r}: {e}") from e
    verify_graph(module)
    return module


def read_input(path: str) -> np.ndarray:
    try:
        data = open(path, "rb").read()
    except OSError as e:
        raise CVMRuntimeError(f"cannot read input {path!r}: {e.strerror}") from e
    if len(data) % 4:
        raise CVMLogicError(f"input {path!r}: expected whole int32 values, got {len(data)} bytes")
    return np.frombuffer(data, dtype="<i4").astype(np.int32)


def run(args: argparse.Namespace) -> list[dict[int, np.ndarray]]:
    from cvmc.runtime.taskgraph_executor import TaskGraphExecutor, input_frames
    from cvmc.runtime.taskir_files import find_graph

    if args.steps < 1:
        raise CVMLogicError(f"expected --steps >= 1, got {args.steps}")
    module = load_graph_module(args.graph)
    graph = find_graph(module)
    flat = read_input(args.input) if args.input is not None else np.zeros(0, dtype=np.int32)
    frames = input_frames(graph, flat, args.steps)
    if args.device == "cpu":
        from cvmc.runtime.taskgraph_jit import TaskGraphJit

        return TaskGraphJit(module).run(args.steps, frames)
    return TaskGraphExecutor(graph).run(args.steps, frames)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cvm-task", description="Run a Task IR graph.")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run", help="run a graph and print its OUTPUT blocks")
    p.add_argument("graph", help="a .task, .task.txt or .mlir file")
    p.add_argument("input", nargs="?", help="raw little-endian int32 values of the INPUT blocks")
    p.add_argument("--steps", type=int, default=1, help="time steps to run (default 1)")
    p.add_argument(
        "--device",
        choices=["ref", "cpu"],
        default="ref",
        help="ref: the reference executor (default); cpu: compiled loops on the CPU JIT",
    )
    args = parser.parse_args(argv)
    try:
        steps = run(args)
    except CVMError as e:
        print(f"cvm-task: error: {e}", file=sys.stderr)
        return e.status
    except Exception as e:  # never a traceback
        print(f"cvm-task: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return CVMRuntimeError.status
    lines = [str(int(v)) for outputs in steps for values in outputs.values() for v in values]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
