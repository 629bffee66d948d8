"""`cvm-opt`: xDSL's opt driver with the project's dialects and passes registered.

    cvm-opt model.mlir -p cvm-infer-shapes,cvm-gas
    cvm-opt invalid.mlir --split-input-file --verify-diagnostics
"""

import sys

from xdsl.xdsl_opt_main import xDSLOptMain

from cvmc.dialects import get_all_dialects
from cvmc.passes import get_all_passes


class CvmOptMain(xDSLOptMain):
    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

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
