"""Which device the loop level is built for: the host CPU (the default) or a CUDA GPU (`gpu_target()`).

The plan and the kernel builders read it where the two devices want different code: the packed element types of
conv2d and dense (int8 for `__dp4a` on the GPU), their packed widths, and the GPU's own kernels for conv2d,
dense and packing (`cvm_loops_gpu`). Everything else is built the same for both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_GPU: ContextVar[bool] = ContextVar("cvmc_gpu_target", default=False)


@contextmanager
def gpu_target() -> Iterator[None]:
    """Build the loop level for a CUDA GPU in this context (`cvmc.runtime.cuda` lowers inside it)."""
    token = _GPU.set(True)
    try:
        yield
    finally:
        _GPU.reset(token)


def is_gpu_target() -> bool:
    return _GPU.get()
