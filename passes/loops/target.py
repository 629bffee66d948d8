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

What code generation reads travels in the target too: `cpu` and `features`, the LLVM CPU and features the object
code is compiled for ("": this machine's CPU, the CPU's own features; `cvm-aot`'s tiers name theirs), and
`vector_bytes`, the width of the float vector registers the cinn path's micro-kernels block for (32: AVX2's 16
ymm, 64: AVX-512's 32 zmm). Printed, they follow the flags, `features` last (its value holds commas):

    Target.parse("x86:avx2,vector_bytes=64,cpu=x86-64-v4,features=+avx2,+avx512f,-amx-int8")

On a module the target is the attribute `cvmc.target = #cvmc.target<...>` (`dialects.cvmc.TargetAttr`, whose
verifier is the one rule of a target's fields, `dialects.cvmc.target_error`); the passes of `cvm-to-loops` read it
there (`module_target`), their option `target` (the printed form) sets it, and without either they build for
`DEFAULT`, which depends on no machine. Host detection and the `CVMC_*` overrides live in one place,
`cvmc.runtime.driver.target.detect_target`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypedDict

from cvmc.dialects.target_rules import TIERS, target_error

if TYPE_CHECKING:  # `Target` itself is plain data: a warm `load_model` imports it without xDSL
    from xdsl.dialects.builtin import ModuleOp

    from cvmc.dialects.cvmc import TargetAttr

ISAS = TIERS
ATTRIBUTE = "cvmc.target"  # the module attribute holding the target (a `TargetAttr`)
_FLAGS: dict[str, tuple[Literal["mmk", "emulated"], bool]] = {"no-mmk": ("mmk", False), "emulated": ("emulated", True)}
_VALUES = ("vector_bytes", "cpu", "features")  # `name=value` after the flags, `features` last
_FORM = f"x86:<{'|'.join(ISAS)}>[,no-mmk][,emulated][,vector_bytes=N][,cpu=NAME][,features=+a,-b,...] or cuda:<arch>"


class _Fields(TypedDict, total=False):
    """The fields of a `Target` its printed form sets after the tier."""

    mmk: bool
    emulated: bool
    vector_bytes: int
    cpu: str
    features: str


@dataclass(frozen=True)
class Target:
    """A CPU (`gpu` None) of ISA tier `isa`, or a CUDA GPU of architecture `gpu` (e.g. "sm_90"); for a CPU, the
    LLVM `cpu` and `features` code generation compiles for ("": this machine's, the CPU's own) and the float
    vector width `vector_bytes` of the cinn kernels."""

    isa: str = "avx2"
    gpu: str | None = None
    mmk: bool = True
    emulated: bool = False
    cpu: str = ""
    features: str = ""
    vector_bytes: int = 32

    def __post_init__(self) -> None:
        error = target_error(self.isa, self.gpu, self.mmk, self.emulated, self.cpu, self.features, self.vector_bytes)
        if error is not None:
            raise ValueError(error)

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
        if self.vector_bytes != 32:
            flags.append(f"vector_bytes={self.vector_bytes}")
        flags += [f"{name}={getattr(self, name)}" for name in ("cpu", "features") if getattr(self, name)]
        return ",".join([f"x86:{self.isa}", *flags])

    @staticmethod
    def parse(text: str) -> Target:
        """The target printed as `text`; a ValueError naming what is wrong."""
        head, *flags = text.strip().split(",")
        kind, _, name = head.partition(":")
        if kind == "cuda" and name and not flags:
            return Target(gpu=name)
        if kind != "x86" or name not in ISAS:
            raise ValueError(f"expected a target {_FORM}, got {text!r}")
        fields: _Fields = {}
        for i, flag in enumerate(flags):
            key, equals, value = flag.partition("=")
            if key == "features" and equals:
                value = ",".join([value, *flags[i + 1:]])
            if key in _FLAGS and not equals:
                field, setting = _FLAGS[key]
                fields[field] = setting
            elif key in _VALUES and equals:
                if key in fields:
                    raise ValueError(f"expected each of {', '.join(_VALUES)} once, got {key} twice in {text!r}")
                if key == "vector_bytes":
                    if not value.isdigit():
                        raise ValueError(f"expected vector_bytes=<an integer>, got {flag!r} in {text!r}")
                    fields[key] = int(value)
                else:
                    fields[key] = value
            else:
                raise ValueError(f"expected a target flag in {', '.join(_FLAGS)} or {'=..., '.join(_VALUES)}=..., "
                                 f"got {flag!r} in {text!r}")
            if key == "features":
                break
        return Target(isa=name, **fields)

    def attr(self) -> TargetAttr:
        """This target as the module attribute `cvmc.target`."""
        from cvmc.dialects.cvmc import TargetAttr

        return TargetAttr(self.isa, self.gpu or "", self.mmk, self.emulated, self.cpu, self.features,
                          self.vector_bytes)

    @staticmethod
    def of_attr(attr: TargetAttr) -> Target:
        """The target an attribute `#cvmc.target<...>` (verified) holds."""
        if attr.arch.data:
            return Target(gpu=attr.arch.data)
        return Target(attr.tier.data, None, bool(attr.mmk.data), bool(attr.emulated.data), attr.cpu.data,
                      attr.features.data, attr.vector_bytes.data)


DEFAULT = Target()  # what `cvm-opt` builds without a target: x86-64-v3 (AVX2), on any machine
GPU = Target(gpu="any")  # a CUDA GPU of no particular architecture (the loop level does not depend on it)


def module_target(module: ModuleOp, option: str | None = None) -> Target:
    """The target a pass builds for: its `option` if given (recorded on the module), else the module's
    `cvmc.target`, else DEFAULT (recorded, so that the printed IR says what it was built for). A PassFailedException
    names a bad option or a module attribute of another kind."""
    from xdsl.utils.exceptions import PassFailedException

    from cvmc.dialects.cvmc import TargetAttr

    attr = module.attributes.get(ATTRIBUTE)
    if option is not None:
        try:
            target = Target.parse(option)
        except ValueError as e:
            raise PassFailedException(str(e)) from None
    elif attr is None:
        target = DEFAULT
    elif isinstance(attr, TargetAttr):
        target = Target.of_attr(attr)
    else:
        raise PassFailedException(f"expected the module attribute {ATTRIBUTE} a #cvmc.target<...>, got {attr}")
    set_module_target(module, target)
    return target


def set_module_target(module: ModuleOp, target: Target) -> None:
    module.attributes[ATTRIBUTE] = target.attr()
