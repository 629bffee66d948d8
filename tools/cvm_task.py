"""`cvm-task`: run a Task IR graph.

    cvm-task run lenet.task.txt i_0_0_0.dat          # prints the OUTPUT blocks' values, one per line
    cvm-task run cc.task.txt                         # a graph without INPUT blocks needs no input
    cvm-task run snn.task --steps 4 frames.dat       # 4 steps: one frame for all, or one per step
    cvm-task run lenet.task.txt i_0_0_0.dat --device cpu   # through the CPU JIT

GRAPH is a `.task` (binary), `.task.txt` (text) or `.mlir` file, at most `files.MAX_FILE_BYTES` (1 GiB).
INPUT is raw little-endian int32: the INPUT blocks' values in file order, (y, x, f) row-major; no more than
the frames the graph and `--steps` take are read from it. Each step prints every OUTPUT block (file order),
one integer per line, as soon as the step ends (a reader that stops early, `| head`, stops the run); with
`--steps N` above 1 a line `# step K` (K = 1 .. N) comes before each step's values. Exit
status: 0, 1 on a logic error (a bad graph or input, a graph with no OUTPUT block), 2 on a runtime error (an
unreadable file, an internal failure), 64 on a usage error; the message goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

import numpy as np

from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.tools import cli


def load_graph_module(path: str):
    """A verified module holding the graph of a `.task`, `.task.txt` or `.mlir` file."""
    from cvmc.runtime.frontend.taskir_files import import_task, verify_graph

    if not path.endswith(".mlir"):
        return import_task(path)
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError, VerifyException

    from cvmc.dialects.taskgraph import TaskGraph
    from cvmc.runtime.frontend.files import read_text

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(TaskGraph)
    text = read_text(path, "graph")
    cli.linear_mlir_lexer()
    try:
        module = cli.parsed(Parser(ctx, text, path).parse_module, repr(path))
    except ParseError as e:
        raise CVMRuntimeError(f"cannot parse {path!r}: {e}") from e
    except VerifyException as e:  # an attribute that does not verify as it is parsed
        raise CVMLogicError(f"invalid task graph: {e}") from None
    verify_graph(module)
    return module


def read_input(path: str, limit: int) -> np.ndarray:
    """The int32 values of an input file, at most `limit` bytes of it."""
    from cvmc.runtime.frontend.files import read_bounded

    data = read_bounded(path, "input", limit, f"the graph's frames for these steps hold {limit} bytes")
    if len(data) % 4:
        raise CVMLogicError(f"input {path!r}: expected whole int32 values, got {len(data)} bytes")
    return np.frombuffer(data, dtype="<i4").astype(np.int32)


def run(args: argparse.Namespace) -> Iterator[dict[int, np.ndarray]]:
    """The outputs of each step, as each step ends."""
    from cvmc.dialects.taskgraph import OutputOp
    from cvmc.runtime.frontend.taskir_files import find_graph
    from cvmc.runtime.references.taskgraph import TaskGraphExecutor, frame_values, input_frames

    module = load_graph_module(args.graph)
    graph = find_graph(module)
    if not any(isinstance(b, OutputOp) for b in graph.blocks):
        raise CVMLogicError(f"graph {args.graph!r} has no OUTPUT block: a run would print nothing")
    per_frame = 4 * frame_values(graph)
    limit = per_frame * (args.steps if args.steps > 1 else 1)
    flat = read_input(args.input, limit) if args.input is not None else np.zeros(0, dtype=np.int32)
    frames = input_frames(graph, flat, args.steps)
    if args.device == "cpu":
        from cvmc.runtime.devices.taskgraph_jit import TaskGraphJit

        return TaskGraphJit(module).iter_steps(args.steps, frames)
    return TaskGraphExecutor(graph).iter_steps(args.steps, frames)


FORMATS = """formats:
  GRAPH  a Task IR file: .task (protobuf binary), .task.txt (protobuf text) or .mlir (the taskgraph dialect)
  INPUT  raw little-endian int32: the INPUT blocks' values in file order, each block (y, x, f) row-major; one
         frame for every step, or one frame per step (--steps N)
  stdout every OUTPUT block's values (file order), one integer per line, as each step ends; with --steps N above 1
         a line `# step K` (K = 1 .. N) before each step's values

"""


def _print(steps: Iterator[dict[int, np.ndarray]], headed: bool) -> int:
    """Each step's OUTPUT values, one a line; `headed` (more than one step): a line `# step K` before each."""
    for k, outputs in enumerate(steps, 1):
        head = f"# step {k}\n" if headed else ""
        sys.stdout.write(head + "".join(f"{v}\n" for values in outputs.values() for v in values.tolist()))
    return 0


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def main(argv: list[str] | None = None) -> int:
    parser = cli.ArgumentParser(prog="cvm-task", description="Run a Task IR graph.", epilog=FORMATS + cli.EXIT_STATUSES)
    cli.add_common_arguments(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run", help="run a graph and print its OUTPUT blocks", epilog=FORMATS + cli.EXIT_STATUSES)
    p.add_argument("graph", help="a .task, .task.txt or .mlir file")
    p.add_argument("input", nargs="?", help="raw little-endian int32 values of the INPUT blocks")
    p.add_argument("--steps", type=_positive, default=1, help="time steps to run (default 1)")
    p.add_argument(
        "--device",
        choices=["reference", "ref", "cpu"],
        default="reference",
        help="reference (or ref): the reference executor (default); cpu: compiled loops on the CPU JIT",
    )
    args = parser.parse_args(argv)
    cli.setup_logging(args)
    return cli.run_tool("cvm-task", lambda: _print(run(args), args.steps > 1))


if __name__ == "__main__":
    sys.exit(main())
