"""What the loop level is built for: a frozen `Target`, chosen once at the API or tool boundary and passed down.

    Target.parse("x86:avx512-vnni")      # the CPU, AVX512-VNNI and every tier below it
    Target.parse("x86:avx2,no-mmk")      # AVX2, without the register-blocked micro-kernels
    Target.parse("x86:avx512-vnni,emulated")  # the tier's kernels in portable LLVM IR (same packing and tiling)
    Target.parse("cuda:sm_90")           # a CUDA GPU (`loops.gpu`'s kernels)

`isa` is the highest x86 tier the kernels may use; each implies the ones below (`has`):
- "generic": no intrinsic (the int16 micro-kernel `cvmc.mmk_i16` is plain LLVM IR: any CPU);
- "avx2": the u8 x s8 micro-kernel `cvmc.mmk_u8s8` on `vpmaddubsw` (x86-64-v3);
- "avx512-vnni": int8 dot products on `vpdpbusd` (`cvmc.dot_u8s8`, and `cvmc.mmk_u8s8` with `isa` =
  "avx512-vnni": 512-bit accumulators, twice the AVX2 kernel's lanes) (x86-64-v4 with VNNI);
- "amx": AMX-INT8 tiles (`cvmc.mmk_u8s8` with `isa` = "amx": tiles of 16 pixels x 16 channels, `tdpbusd`).
`emulated` lowers each tier's kernels in portable IR with the same packing and tiling, so every tier's layouts
run bit for bit on any CPU; `mmk` = False turns the register-blocked micro-kernels off (A/B comparisons).

The passes of `cvm-to-loops` read the target from the module attribute `cvmc.target` (its printed form); their
option `target` sets it, and without either they build for `DEFAULT`, which depends on no machine. Host detection
and the `CVMC_*` overrides live in one place, `cvmc.runtime.target.detect_target`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `Target` itself is plain data: a warm `load_model` imports it without xDSL
    from xdsl.dialects.builtin import ModuleOp

ISAS = ("generic", "avx2", "avx512-vnni", "amx")
ATTRIBUTE = "cvmc.target"  # the module attribute holding the printed target
_FLAGS = {"no-mmk": ("mmk", False), "emulated": ("emulated", True)}


@dataclass(frozen=True)
class Target:
    """A CPU (`gpu` None) of ISA tier `isa`, or a CUDA GPU of architecture `gpu` (e.g. "sm_90")."""

    isa: str = "avx2"
    gpu: str | None = None
    mmk: bool = True
    emulated: bool = False

    def __post_init__(self) -> None:
        if self.isa not in ISAS:
            raise ValueError(f"expected an ISA tier in {', '.join(ISAS)}, got {self.isa!r}")

    def has(self, isa: str) -> bool:
        """Whether the CPU kernels may use tier `isa` (never on a GPU)."""
        return self.gpu is None and ISAS.index(self.isa) >= ISAS.index(isa)

    @property
    def blocked(self) -> bool:
        """Whether conv2d may take the register-blocked micro-kernels (`cvmc.mmk_*`): the CPU's, unless off."""
        return self.gpu is None and self.mmk

    def capped(self, isa: str) -> Target:
        """This target with its tier lowered to `isa` where it is above it."""
        return self if not self.has(isa) or self.gpu is not None else replace(self, isa=isa)

    def __str__(self) -> str:
        if self.gpu is not None:
            return f"cuda:{self.gpu}"
        flags = [name for name, (field, value) in _FLAGS.items() if getattr(self, field) == value]
        return ",".join([f"x86:{self.isa}", *flags])

    @staticmethod
    def parse(text: str) -> Target:
        """The target printed as `text`; a ValueError naming what is wrong."""
        head, *flags = text.strip().split(",")
        kind, _, name = head.partition(":")
        if kind == "cuda" and name and not flags:
            return Target(gpu=name)
        if kind != "x86" or name not in ISAS:
            raise ValueError(f"expected a target x86:<{'|'.join(ISAS)}>[,no-mmk][,emulated] or cuda:<arch>, got "
                             f"{text!r}")
        fields = {}
        for flag in flags:
            if flag not in _FLAGS:
                raise ValueError(f"expected a target flag in {', '.join(_FLAGS)}, got {flag!r} in {text!r}")
            field, value = _FLAGS[flag]
            fields[field] = value
        return Target(isa=name, **fields)  # type: ignore[arg-type]


DEFAULT = Target()  # what `cvm-opt` builds without a target: x86-64-v3 (AVX2), on any machine
GPU = Target(gpu="any")  # a CUDA GPU of no particular architecture (the loop level does not depend on it)


def module_target(module: ModuleOp, option: str | None = None) -> Target:
    """The target a pass builds for: its `option` if given (recorded on the module), else the module's
    `cvmc.target`, else DEFAULT (recorded, so that the printed IR says what it was built for)."""
    from xdsl.dialects.builtin import StringAttr
    from xdsl.utils.exceptions import PassFailedException

    attr = module.attributes.get(ATTRIBUTE)
    text = option if option is not None else attr.data if isinstance(attr, StringAttr) else str(DEFAULT)
    try:
        target = Target.parse(text)
    except ValueError as e:
        raise PassFailedException(str(e)) from None
    module.attributes[ATTRIBUTE] = StringAttr(str(target))
    return target


def set_module_target(module: ModuleOp, target: Target) -> None:
    from xdsl.dialects.builtin import StringAttr

    module.attributes[ATTRIBUTE] = StringAttr(str(target))
