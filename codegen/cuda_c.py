"""The C of the CUDA printer (`codegen.cuda`): the prelude of typedefs, C types and literals, the wrapping
integer expressions (no C++ undefined behaviour: narrow operands widened first, arithmetic on unsigned types) and
the helper functions printed once per module before the kernels that use them (total division, shifts, float
bit tricks, clamps, word loads)."""

from __future__ import annotations

import struct

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, IntegerType
from xdsl.ir import Attribute

from cvmc.codegen.cuda_launch import bit_width

# --------------------------------------------------------------------------------------------------------------
# Names, types and literals
# --------------------------------------------------------------------------------------------------------------

PRELUDE = """\
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
"""


def is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType | IndexType)


def c_type(t: Attribute) -> str:
    """The C type of an SSA value of type `t` (in registers)."""
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    w = bit_width(t)
    return "bool" if w == 1 else f"i{w}"


def memory_c_type(t: Attribute) -> str:
    """The C type of an element of type `t` in memory (i1 is a byte)."""
    ty = c_type(t)
    return "u8" if ty == "bool" else ty


def int_literal(value: int, w: int) -> str:
    """An integer constant of `w` bits, wrapped to the signed range, with the C type of its register."""
    if w == 1:
        return "true" if value & 1 else "false"
    half = 1 << (w - 1)
    v = (value + half) % (2 * half) - half
    if w == 64:
        return "(-9223372036854775807LL - 1)" if v == -half else f"{v}LL"
    if w == 32:
        return "(-2147483647 - 1)" if v == -half else (f"({v})" if v < 0 else str(v))
    return f"((i{w}){v})"


def float_literal(value: float, t: Attribute) -> str:
    """A float constant: the shortest decimal that reads back to the same bits, or the bits themselves."""
    if isinstance(t, Float32Type):
        if np.isfinite(np.float32(value)):
            text = np.format_float_scientific(np.float32(value), unique=True, trim="-") + "f"
            return f"({text})" if text.startswith("-") else text
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
        return f"__int_as_float((i32)0x{bits:08x}u)"
    if np.isfinite(value):
        text = repr(float(value))
        return f"({text})" if text.startswith("-") else text
    (bits,) = struct.unpack("<Q", struct.pack("<d", value))
    return f"__longlong_as_double((i64)0x{bits:016x}ull)"


# Integer expressions. Operands are primary expressions (a variable, or a literal in parentheses); a result is a
# cast expression, so it may be an operand of any binary operator but must be parenthesized before a cast.


def zext(x: str, w: int) -> str:
    """`x` (an integer of `w` bits) zero-extended to u32, or u64 for 64 bits."""
    if w == 64:
        return f"(u64){x}"
    if w in (8, 16):
        return f"(u32)(u{w}){x}"
    return f"(u32){x}"


def sext(x: str, w: int) -> str:
    """`x` sign-extended to i32, or i64 for 64 bits (a true i1 is -1)."""
    if w in (32, 64):
        return x
    if w == 1:
        return f"-(i32){x}"
    return f"(i32){x}"


def low(x: str, w: int) -> str:
    """`x` as an unsigned value whose low `w` bits are `x`'s (any extension will do)."""
    return f"(u64){x}" if w == 64 else f"(u32){x}"


def wrap(x: str, w: int) -> str:
    """The low `w` bits of `x` (a primary expression, unsigned or wider) as the register type of `w` bits."""
    if w == 1:
        return f"(({x} & 1u) != 0)"
    return f"(i{w}){x}"


# --------------------------------------------------------------------------------------------------------------
# Helper functions, printed once per module before the kernels that use them
# --------------------------------------------------------------------------------------------------------------

DEVICE = "static __device__ __forceinline__"


def _division_helpers(s: str, u: str) -> dict[str, str]:
    """Total division and remainder on `s` (i32 / i64) and `u` (u32 / u64); see the module docstring."""
    neg = f"({s})(({u})0 - ({u})a)"  # -a, wrapping: -INT_MIN == INT_MIN
    return {
        f"cvmc_divsi_{s}": f"{DEVICE} {s} cvmc_divsi_{s}({s} a, {s} b) {{\n"
                           f"  return b == 0 ? 0 : (b == -1 ? {neg} : a / b);\n}}\n",
        f"cvmc_remsi_{s}": f"{DEVICE} {s} cvmc_remsi_{s}({s} a, {s} b) {{\n"
                           f"  return (b == 0 || b == -1) ? 0 : a % b;\n}}\n",
        f"cvmc_floordivsi_{s}": f"{DEVICE} {s} cvmc_floordivsi_{s}({s} a, {s} b) {{\n"
                                f"  if (b == 0) return 0;\n"
                                f"  if (b == -1) return {neg};\n"
                                f"  {s} q = a / b, r = a % b;\n"
                                f"  return (r != 0 && (r ^ b) < 0) ? q - 1 : q;\n}}\n",
        f"cvmc_ceildivsi_{s}": f"{DEVICE} {s} cvmc_ceildivsi_{s}({s} a, {s} b) {{\n"
                               f"  if (b == 0) return 0;\n"
                               f"  if (b == -1) return {neg};\n"
                               f"  {s} q = a / b, r = a % b;\n"
                               f"  return (r != 0 && (r ^ b) >= 0) ? q + 1 : q;\n}}\n",
        f"cvmc_divui_{u}": f"{DEVICE} {u} cvmc_divui_{u}({u} a, {u} b) {{\n"
                           f"  return b == 0 ? 0 : a / b;\n}}\n",
        f"cvmc_remui_{u}": f"{DEVICE} {u} cvmc_remui_{u}({u} a, {u} b) {{\n"
                           f"  return b == 0 ? 0 : a % b;\n}}\n",
        f"cvmc_ceildivui_{u}": f"{DEVICE} {u} cvmc_ceildivui_{u}({u} a, {u} b) {{\n"
                               f"  return b == 0 ? 0 : a / b + (a % b != 0);\n}}\n",
        f"cvmc_ipowi_{s}": f"{DEVICE} {s} cvmc_ipowi_{s}({s} b, {s} e) {{\n"
                           f"  // b ** e wrapping; e < 0 gives 1 / b ** -e in integers (0 unless b is 1 or -1)\n"
                           f"  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);\n"
                           f"  {u} r = 1, p = ({u})b;\n"
                           f"  for ({u} k = ({u})e; k != 0; k >>= 1) {{\n"
                           f"    if (k & 1) r *= p;\n"
                           f"    p *= p;\n"
                           f"  }}\n"
                           f"  return ({s})r;\n}}\n",
    }  # fmt: skip


def _float_helpers(t: str, bits: str, add: str) -> dict[str, str]:
    """IEEE minimum / maximum on `t`: NaN if either is NaN, -0 below +0."""
    out: dict[str, str] = {}
    for op, less, zero in (("minimumf", "<", "a : b"), ("maximumf", ">", "b : a")):
        out[f"cvmc_{op}_{t}"] = (
            f"{DEVICE} {t} cvmc_{op}_{t}({t} a, {t} b) {{\n"
            f"  if (a != a || b != b) return {add}(a, b);\n"
            f"  if (a == b) return {bits}(a) < 0 ? {zero};\n"
            f"  return a {less} b ? a : b;\n}}\n"
        )
    return out


HELPERS: dict[str, str] = {
    **_division_helpers("i32", "u32"),
    **_division_helpers("i64", "u64"),
    **_float_helpers("float", "__float_as_int", "__fadd_rn"),
    **_float_helpers("double", "__double_as_longlong", "__dadd_rn"),
    "cvmc_clamp_i32": f"{DEVICE} i32 cvmc_clamp_i32(i32 x, i32 lo, i32 hi) {{\n"
                      f"  return x < lo ? lo : (x > hi ? hi : x);\n}}\n",
    "cvmc_clamp_u32": f"{DEVICE} u32 cvmc_clamp_u32(u32 x, u32 hi) {{\n"
                      f"  return x > hi ? hi : x;\n}}\n",
    # four bytes as one word: NVRTC and nvcc make it one 32-bit load (the alignment is promised), no type punning
    "cvmc_load_word": f"{DEVICE} i32 cvmc_load_word(const i8 *p) {{\n"
                      f"  const u8 *q = (const u8 *)__builtin_assume_aligned(p, 4);\n"
                      f"  return (i32)((u32)q[0] | (u32)q[1] << 8 | (u32)q[2] << 16 | (u32)q[3] << 24);\n}}\n",
}  # fmt: skip
