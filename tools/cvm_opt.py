"""`cvm-opt`: xDSL's opt driver with the project's dialects and passes registered.

    cvm-opt model.mlir -p cvm-infer-shapes,cvm-gas
    cvm-opt invalid.mlir --split-input-file --verify-diagnostics
    cvm-opt model.mlir -p cvm-to-loops -t cuda        # the loop level printed as CUDA C (or -t llvm-ir)

The input (a file or stdin) is read up to `files.MAX_FILE_BYTES` (1 GiB). Exit status: 0, 1 for IR that does
not verify (a logic error), 2 for input that cannot be read or parsed or an internal failure, 64 for a usage
error (`cli.EXIT_STATUSES`).
"""

import argparse
import io
import os
import sys
from typing import IO

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from cvmc.dialects import get_all_dialects
from cvmc.errors import CVMLogicError
from cvmc.passes import get_all_passes
from cvmc.runtime import files
from cvmc.tools import cli


def _kernels(module: ModuleOp) -> ModuleOp:
    """The loop-level kernels of a module; a host function calling them (as convert-cvm-to-loops writes) is
    set aside, since code generators print kernels only."""
    if any(isinstance(op, func.CallOp) for op in module.walk()):
        from cvmc.runtime.cpu import read_host

        return read_host(module.clone())[1]
    return module


def _print_llvm_ir(module: ModuleOp, out: IO[str]) -> None:
    from cvmc.codegen.llvm import emit_llvm

    out.write(str(emit_llvm(_kernels(module))))


def _print_cuda(module: ModuleOp, out: IO[str]) -> None:
    from cvmc.codegen.cuda import emit_cuda

    out.write(emit_cuda(_kernels(module)))


def _version_format() -> str:
    import cvmc

    return f"cvm-opt (cvmc) {cvmc.__version__}, built on xdsl {{xdsl_version}}"


class CvmOptMain(xDSLOptMain):
    version_format = _version_format()

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.prog = "cvm-opt"
        arg_parser.epilog = cli.EXIT_STATUSES
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input, read whole but at most MAX_FILE_BYTES of it (a FIFO or /dev/zero ends in an error)."""
        path = self.args.input_file
        if path is None:
            limit = files.MAX_FILE_BYTES
            data = sys.stdin.buffer.read(limit + 1)
            if len(data) > limit:
                raise CVMLogicError(f"the input on stdin holds more than {limit} bytes (the limit)")
            return io.BytesIO(data), "mlir"
        extension = os.path.splitext(path)[1].replace(".", "")
        return io.BytesIO(files.read_bounded(path, "input file")), extension

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets["llvm-ir"] = _print_llvm_ir
        self.available_targets["cuda"] = _print_cuda

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)


def main(args: list[str] | None = None) -> int:
    def run() -> int:
        try:
            tool = CvmOptMain(description="cvmc's modular optimizer driver", args=args)
        except ValueError as e:  # a pass pipeline (-p) xDSL cannot parse
            raise cli.UsageError(str(e)) from None
        tool.run()
        return 0

    try:
        return cli.run_tool("cvm-opt", run)
    except SystemExit as e:  # xDSL's own argparse parser: a usage error is status 64, not argparse's 2
        return cli.usage_status(e)


if __name__ == "__main__":
    sys.exit(main())
