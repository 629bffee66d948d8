"""`cvm-opt`: xDSL's opt driver with the project's dialects and passes registered.

    cvm-opt model.mlir -p cvm-infer-shapes,cvm-gas
    cvm-opt invalid.mlir --split-input-file --verify-diagnostics
    cvm-opt model.mlir -p cvm-to-loops -t cuda        # the loop level printed as CUDA C (or -t llvm-ir)
"""

import sys
from typing import IO

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from cvmc.dialects import get_all_dialects
from cvmc.passes import get_all_passes


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


class CvmOptMain(xDSLOptMain):
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
    try:
        CvmOptMain(description="cvmc's modular optimizer driver", args=args).run()
    except Exception as e:  # a clear message, never a traceback
        print(f"cvm-opt: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
