"""The kernel ABI shared by the code generators and the runtimes: what a caller needs to know about a kernel.

Kept apart from the printers (and free of xDSL) so that a runtime loading compiled kernels from the cache
imports none of the compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The element strides of a contiguous row-major array of this shape."""
    strides: list[int] = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


@dataclass(frozen=True)
class KernelArg:
    """One memref argument: element `(i0, ..., ik)` is at `base + offset + sum(i * strides)` elements."""

    shape: tuple[int, ...]
    element: str  # "i1", "i8", "i16", "i32", "i64", "f32" or "f64"
    strides: tuple[int, ...]
    offset: int
    written: bool  # the kernel stores into this argument (or a view of it)

    @property
    def contiguous(self) -> bool:
        """True when the layout is row-major without gaps (the identity layout, up to the offset)."""
        return self.strides == row_major_strides(self.shape)

    def element_span(self) -> tuple[int, int]:
        """The smallest and one past the largest element index touched, relative to the base pointer."""
        if any(n == 0 for n in self.shape):
            return self.offset, self.offset
        lo = self.offset + sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        hi = self.offset + sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        return lo, hi + 1


@dataclass(frozen=True)
class KernelSpec:
    """A kernel's arguments and its `trip`: the number of units that `(begin, end)` selects from."""

    name: str
    args: tuple[KernelArg, ...]
    trip: int
    splittable: bool  # units are iterations of the top-level scf.parallel (else trip == 1)

    @property
    def symbol(self) -> str:
        """The LLVM function: the kernel's name, unless that is a C library function the code may call."""
        return kernel_symbol(self.name)


# C functions that kernels call or that LLVM lowers intrinsics to: a kernel of that name must not define them.
_C_SYMBOLS = frozenset(
    name + suffix
    for name in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos", "tan",
                 "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "floor",
                 "ceil", "round", "roundeven", "trunc", "rint", "nearbyint", "pow", "copysign", "fma", "fmod",
                 "fabs", "fmin", "fmax", "fminimum", "fmaximum", "ldexp", "frexp", "sincos")
    for suffix in ("", "f")
) | {"abs", "labs", "aligned_alloc", "malloc", "free", "memcpy", "memmove", "memset"}  # fmt: skip


def kernel_symbol(name: str) -> str:
    """The LLVM symbol of the kernel `name`: `name`, or `name.kernel` where `name` is a C library function."""
    return f"{name}.kernel" if name in _C_SYMBOLS or name.startswith(("llvm.", "__cvmc_")) else name
