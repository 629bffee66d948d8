"""cvmc: a compiler for CVM integer networks, CINN primitives and Task IR, built on xDSL.

    import cvmc
    m = cvmc.load_model("model.json", "params.bin")   # device="cpu" by default
    outs = m.run(x)                                   # one int32 array per head
    net = cvmc.load_model("net/")                     # a folder: model.json, params.bin (quantize.json: floats)
    m.gas                                             # as CVMAPIGetGasFromModel

Names are imported lazily so that `import cvmc` (and the command-line tools) start fast.
"""

from typing import TYPE_CHECKING

from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError

# The one place the version is written (pyproject.toml reads it from here): reading the installed metadata instead
# would import `importlib.metadata`, 55 ms of every start.
__version__ = "0.1.0"

if TYPE_CHECKING:  # what __getattr__ below imports on first use
    from cvmc.runtime.builder import CvmBuilder
    from cvmc.runtime.cinn_builder import CinnBuilder
    from cvmc.runtime.model import Model, load_model
    from cvmc.runtime.quantize import Quantized, quantize

__all__ = [
    "CVMError",
    "CVMLogicError",
    "CVMRuntimeError",
    "CinnBuilder",
    "CvmBuilder",
    "Model",
    "Quantized",
    "__version__",
    "load_model",
    "quantize",
]

_LAZY = {
    "load_model": "cvmc.runtime.model",
    "Model": "cvmc.runtime.model",
    "CvmBuilder": "cvmc.runtime.builder",
    "CinnBuilder": "cvmc.runtime.cinn_builder",
    "quantize": "cvmc.runtime.quantize",
    "Quantized": "cvmc.runtime.quantize",
}


def __dir__() -> list[str]:
    """The module's names with the lazy ones (`dir(cvmc)` showed neither `load_model` nor `Model`)."""
    return sorted({*globals(), *_LAZY, "examples", "aot"})


def __getattr__(name: str):
    if name in ("examples", "aot"):  # cvmc.aot: the AOT store's Python door (cvmc.aot.load)
        import importlib

        return importlib.import_module("cvmc.examples" if name == "examples" else "cvmc.runtime.devices.aot_serve")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cvmc' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
