"""`cvm-translate`: between model files and IR.

    cvm-translate --import-cvm model.json params.bin [-o model.mlir]   # cvm-runtime files -> cvm IR
    cvm-translate --import-cvm net/ [-o model.mlir]                    # ... from a model folder
    cvm-translate --export-cvm model.mlir -o DIR                       # cvm IR -> DIR/model.json, DIR/params.bin
    cvm-translate --import-task task.json [-o task.mlir]               # Task IR file -> taskgraph IR
    cvm-translate --export-task task.mlir -o task.json                 # taskgraph IR -> Task IR file

IR goes to stdout when no `-o` is given. Errors print a message on stderr; the exit status is 1 for a logic
error (the model's fault: a rule it breaks, IR that does not verify), 2 for a runtime error (a file that
cannot be read or parsed, an unsupported construct) and 64 for a usage error. An IR file is read up to
`files.MAX_FILE_BYTES` (1 GiB).
"""

from __future__ import annotations

import argparse
import sys
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from cvmc.errors import CVMLogicError
from cvmc.tools import cli


def _context() -> Context:
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    from cvmc.dialects import register_all_dialects

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    register_all_dialects(ctx)
    return ctx


def _read_module(path: str) -> ModuleOp:
    from xdsl.parser import Parser

    from cvmc.runtime.frontend.files import read_text

    text = read_text(path, "IR file")
    cli.linear_mlir_lexer()
    module = cli.parsed(Parser(_context(), text, path).parse_module, repr(path))
    try:
        module.verify()
    except VerifyException as e:
        for op in module.walk():  # say which op is wrong
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException:
                name = op.properties.get("name")
                where = op.name + (f" {name.data!r}" if isinstance(name, StringAttr) else "")
                raise CVMLogicError(f"{where}: {e}") from None
        raise CVMLogicError(str(e)) from None
    return module


def _write_module(module: ModuleOp, output: str | None) -> None:
    def emit(stream: IO[str]) -> None:
        Printer(stream=stream).print_op(module)
        stream.write("\n")

    if output is None:
        emit(sys.stdout)
    else:
        from cvmc.runtime.frontend.files import writing_text

        with writing_text(output, "the output") as f:
            emit(f)


def _run(args: argparse.Namespace) -> int:
    if args.import_cvm:
        from cvmc.runtime.frontend.cvm_ir import graph_to_module
        from cvmc.runtime.frontend.graph import load_graph

        _write_module(graph_to_module(load_graph(*_model_files(args.import_cvm))), args.output)
    elif args.export_cvm:
        from cvmc.runtime.frontend.cvm_ir import module_to_graph
        from cvmc.runtime.frontend.graph import save_graph

        save_graph(module_to_graph(_read_module(args.export_cvm)), args.output)
    elif args.import_task:
        from cvmc.runtime.frontend.taskir_files import import_task

        _write_module(import_task(args.import_task), args.output)
    else:
        from cvmc.runtime.frontend.taskir_files import export_task

        export_task(_read_module(args.export_task), args.output)
    return 0


def _model_files(given: list[str]) -> tuple[str, str]:
    """--import-cvm's model: a folder (its model.json and params.bin) or the two files, in order."""
    import argparse

    from cvmc.runtime.frontend.folder import model_files
    from cvmc.tools.cvm_run import model_arguments

    a = argparse.Namespace(graph=given[0], params=given[1] if len(given) > 1 else None)
    model_arguments(a, "cvm-translate --import-cvm")
    if a.params is None:
        a.graph, a.params, _ = model_files(a.graph)
    return a.graph, a.params


def main(argv: list[str] | None = None) -> int:
    ap = cli.ArgumentParser(prog="cvm-translate", description="Translate between model files and cvmc IR.")
    cli.add_common_arguments(ap)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--import-cvm", nargs="+", metavar="MODEL",
                      help="cvm-runtime model files to cvm IR: a model folder, or model.json then params.bin")
    mode.add_argument("--export-cvm", metavar="IN_MLIR", help="cvm IR to DIR/model.json and DIR/params.bin")
    mode.add_argument("--import-task", metavar="FILE", help="a Task IR file to taskgraph IR")
    mode.add_argument("--export-task", metavar="IN_MLIR", help="taskgraph IR to a Task IR file")
    ap.add_argument("-o", "--output", metavar="PATH", help="output file (a directory for --export-cvm)")
    args = ap.parse_args(argv)
    cli.setup_logging(args)
    if args.import_cvm is not None and len(args.import_cvm) > 2:
        ap.error(f"--import-cvm takes a model folder or two files, got {len(args.import_cvm)}")
    if (args.export_cvm or args.export_task) and not args.output:
        ap.error("an export needs -o")
    return cli.run_tool("cvm-translate", lambda: _run(args))


if __name__ == "__main__":
    sys.exit(main())
