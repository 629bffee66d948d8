#!/usr/bin/env python3
"""Grid prober: every combination of an operator's attributes over small value sets, against cvm-runtime.

    python tests/consensus/grid.py --oracle PATH/run_model [--op reshape ...] [--device reference] [--write]
                                   [--no-valgrind] [--jobs 2]

Each case is a one-operator model: the input `data` (its values a fixed pattern within its precision), the params
the operator needs (`GRIDS` gives them), the operator with attributes written as the file's strings, and its
outputs as the heads. The value sets hold each special code, each sign, 0, the bounds and one past them. The
file's declared output shapes are the runtime's own (the prober reads them from the runtime's "Check output shape
failed, expected to be [..]" and writes the file again), or cvmc's where the runtime refuses otherwise, so the
operator's rule alone decides. The runtime (`run_model --device formal --api-bytes`, one process per case) gives
its decision, the class of its error, its output hash and its gas; cvmc (`load_model(...).infer`, in this process)
must give the same. A case the runtime crashes on, and a difference whose runtime run is not defined (it changes
from run to run, or valgrind's memcheck finds an error: audit.classify), must be refused by cvmc as `undefined in
cvm-runtime`; any other difference is a cvmc bug and is printed.

`--write` stores one compact line per case in tests/data/consensus/grid.jsonl.gz (operator, attributes, input shapes,
declared output shapes, the runtime's status, output hash, gas, `deviation` where cvmc refuses as undefined, and
`limit` where the runtime's run is defined and clean and cvmc refuses it as `not modelled by cvmc`);
tests/runtime/test_consensus_grid.py replays it with no oracle. Per operator it prints: tuples tried, differences.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import itertools
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from audit import classify  # noqa: E402

from cvmc.dialects import cvm_rules as rules  # noqa: E402
from cvmc.runtime.frontend.graph import Graph, Node, graph_to_json, write_params  # noqa: E402

OUT = HERE.parent / "data" / "consensus" / "grid.jsonl.gz"
Shape = tuple[int, ...]

# ---------------------------------------------------------------------------------------------------------
# One case: (op, attrs as the file's strings, input shapes, precisions of the data and of the params, {param name:
# shape}). Input 0 is the model's input `data`; inputs 1.. are the params, whose values `param_values` makes.
# ---------------------------------------------------------------------------------------------------------


def pattern(n: int, precision: int, seed: int = 0) -> list[int]:
    """n values within a precision, a fixed pattern of both signs reaching near its bound (no randomness: the
    same on every machine)."""
    bound = (1 << (min(max(precision, 1), 32) - 1)) - 1
    small, scale = min(bound, 127), max(bound // 127, 1)
    return [((i * 37 + 11 + seed * 101) % (2 * small + 1) - small) * scale for i in range(n)]


def tup(xs: tuple[int, ...]) -> str:
    """A tuple attribute as a file writes it: (1, 2), (1,), ()."""
    return str(tuple(xs))


def tuples(values: list[int], lengths: range) -> Iterator[tuple[int, ...]]:
    for n in lengths:
        yield from itertools.product(values, repeat=n)


def product(**choices: list[str | None]) -> Iterator[dict[str, str]]:
    """Every combination of the given attribute strings; None leaves the attribute out (its default)."""
    names = list(choices)
    for combo in itertools.product(*(choices[n] for n in names)):
        yield {n: v for n, v in zip(names, combo, strict=True) if v is not None}


RANK_SHAPES: list[Shape] = [(), (6,), (2, 3), (2, 1, 3), (1, 2, 1, 3)]
BOOLS = ["True", "False"]


def g_reshape():
    for shape in RANK_SHAPES:
        for codes in tuples([-6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 6], range(1, 4)):
            yield "reshape", {"shape": tup(codes)}, [shape], [8], {}


def g_strided_slice():
    ends = [None, "()", "(-5,)", "(-4,)", "(-1,)", "(0,)", "(1,)", "(3,)", "(4,)", "(5,)", "(2, 2)"]
    for begin, end, stride in itertools.product(ends, ends, [None, "()", "(-2,)", "(-1,)", "(0,)", "(1,)", "(2,)",
                                                             "(1, 1)", "(-1, 2)"]):
        yield "strided_slice", {k: v for k, v in (("begin", begin), ("end", end), ("stride", stride)) if v}, \
            [(4,)], [8], {}
    pairs = [None, "(0, 0)", "(-1, -3)", "(1, 2)", "(-3, -4)", "(2, 3)", "(3, 4)", "(0, -1)"]
    for begin, end, stride in itertools.product(pairs, pairs, [None, "(1, 1)", "(-1, -1)", "(2, -2)", "(1,)"]):
        yield "strided_slice", {k: v for k, v in (("begin", begin), ("end", end), ("stride", stride)) if v}, \
            [(2, 3)], [8], {}
    triples = [None, "()", "(0, 0, 0)", "(-1, -1, -1)", "(1, -2, 3)", "(5, 5, 5)", "(0, 1, 2, 3)", "(-3, 0, -5)"]
    for shape in [(), (2, 1, 4), (1, 2, 1, 3)]:
        for begin, end, stride in itertools.product(triples, triples, [None, "(1, 1, 1)", "(-1, 2, -2)", "(2,)"]):
            yield "strided_slice", {k: v for k, v in (("begin", begin), ("end", end), ("stride", stride)) if v}, \
                [shape], [8], {}


def g_transpose():
    for shape in [(), (3,), (2, 3), (2, 1, 3), (2, 1, 3, 2)]:
        r = len(shape)
        values = list(range(-r - 1, r + 1)) if r < 4 else [-5, -1, 0, 1, 2, 3, 4]
        for axes in tuples(values, range(0, r + 2 if r < 3 else r + 1)):
            yield "transpose", {"axes": tup(axes)} if axes else {}, [shape], [8], {}


def g_squeeze():
    for shape in [(1,), (3,), (1, 3), (3, 1, 1), (1, 2, 1, 3)]:
        r = len(shape)
        for axis in tuples(list(range(-r - 1, r + 1)), range(0, 3)):
            yield "squeeze", {"axis": tup(axis)} if axis else {}, [shape], [8], {}


def g_expand_dims():
    for shape in RANK_SHAPES:
        r = len(shape)
        for axis, n in itertools.product(range(-r - 2, r + 2), [None, "-1", "0", "1", "2", "4096", "4097"]):
            yield "expand_dims", {"axis": str(axis), **({"num_newaxis": n} if n else {})}, [shape], [8], {}


def g_tile():
    for shape in RANK_SHAPES:
        for reps in tuples([-1, 0, 1, 2, 3], range(0, 4)):
            yield "tile", {"reps": tup(reps)} if reps else {}, [shape], [8], {}


def g_repeat():
    for shape in RANK_SHAPES:
        r = len(shape)
        for reps, axis in itertools.product(["-1", "0", "1", "2", "3"], [None, *map(str, range(-r - 1, r + 1))]):
            yield "repeat", {"repeats": reps, **({"axis": axis} if axis else {})}, [shape], [8], {}


def g_reduce():
    for op, shape in itertools.product(["sum", "max"], RANK_SHAPES):
        r = len(shape)
        for axis, keep, excl in itertools.product(tuples(list(range(-r - 1, r + 1)), range(0, 3)), [None, *BOOLS],
                                                  [None, *BOOLS]):
            a = {"axis": tup(axis)} if axis else {}
            yield op, {**a, **({"keepdims": keep} if keep else {}), **({"exclude": excl} if excl else {})}, \
                [shape], [8], {}


def g_max_pool2d():
    for shape in [(1, 1, 5, 5), (1, 2, 4, 3), (2, 1, 1, 2)]:
        for a in product(pool_size=["(1, 1)", "(2, 2)", "(3, 2)", "(0, 1)", "(6, 6)", "(2,)"],
                         strides=[None, "(2, 2)", "(0, 1)", "(3, 1)", "(-1, 1)"],
                         padding=[None, "(1, 1)", "(2, 0)", "(-1, 0)", "(1,)", "(3, 3)"],
                         ceil_mode=[None, "True"]):
            yield "max_pool2d", a, [shape], [8], {}


def g_conv2d():
    for a in product(channels=["1", "2", "0"], kernel_size=["(1, 1)", "(3, 3)", "(2, 3)"],
                     strides=[None, "(2, 2)", "(0, 1)"], padding=[None, "(1, 1)", "(2, 1)", "(-1, 0)"],
                     dilation=[None, "(2, 2)", "(0, 1)"], groups=[None, "2"], use_bias=[None, "False"]):
        ch, g = int(a["channels"]), int(a.get("groups", "1"))
        kh, kw = (int(x) for x in a["kernel_size"].strip("()").split(","))
        params = {"w": (max(ch, 1), 2 // g, kh, kw)}
        if a.get("use_bias") != "False":
            params["b"] = (max(ch, 1),)
        yield "conv2d", a, [(1, 2, 5, 5)], [8], params
        if "strides" not in a and "dilation" not in a:
            yield "conv2d", a, [(1, 2, 2, 3)], [8], params


def g_dense():
    for units, bias, wrows in itertools.product(["-1", "0", "1", "3"], [None, "False"], [1, 3]):
        params = {"w": (wrows, 4), **({} if bias == "False" else {"b": (wrows,)})}
        yield "dense", {"units": units, **({"use_bias": bias} if bias else {})}, [(2, 4)], [8], params


def g_take():
    for shape, ishape in itertools.product([(5,), (2, 3), (2, 1, 3)], [(), (3,), (2, 2)]):
        r = len(shape)
        for axis in [None, "None", *map(str, range(-r - 1, r + 1))]:
            yield "take", {"axis": axis} if axis else {}, [shape], [8], {"i": ishape}


def g_cvm_lut():
    for in_dim, tshape in itertools.product(["-1", "0", "1", "4", "255", "256", "257"], [(4,), (256,), (2, 2)]):
        yield "cvm_lut", {"in_dim": in_dim}, [(2, 3)], [8], {"t": tshape}


def g_clip():
    vals = ["-2147483649", "-2147483648", "-128", "-1", "0", "1", "127", "2147483647", "2147483648"]
    for lo, hi, ip in itertools.product(vals, vals, [8, 32]):
        yield "clip", {"a_min": lo, "a_max": hi}, [(2, 3)], [ip], {}


def g_cvm_clip():
    for p, sign, ip in itertools.product(["-1", "0", "1", "2", "8", "31", "32", "33"], [None, "False"], [8, 32]):
        yield "cvm_clip", {"precision": p, **({"is_sign": sign} if sign else {})}, [(2, 3)], [ip], {}


def g_shift():
    for op, p, sb, ip in itertools.product(["cvm_right_shift", "cvm_left_shift"],
                                           ["-1", "0", "1", "8", "31", "32", "33"],
                                           ["-1", "0", "1", "8", "31", "32", "33"], [8, 16, 32]):
        yield op, {"precision": p, "shift_bit": sb}, [(2, 3)], [ip], {}


def g_precisions():
    for op, ip in itertools.product(["relu", "abs", "negative", "cvm_precision", "flatten"],
                                    [-1, 0, 1, 2, 8, 9, 16, 31, 32, 33]):
        yield op, {}, [(2, 3)], [ip], {}
    unary = [("relu", {}), ("abs", {}), ("negative", {}), ("cvm_precision", {}), ("flatten", {}),
             ("cvm_clip", {"precision": "4"}), ("cvm_right_shift", {"precision": "8", "shift_bit": "3"}),
             ("cvm_left_shift", {"precision": "16", "shift_bit": "3"}), ("clip", {"a_min": "-5", "a_max": "9"}),
             ("squeeze", {}), ("sum", {}), ("max", {}), ("transpose", {}), ("repeat", {"repeats": "2"})]
    for (op, a), shape, ip in itertools.product(unary, RANK_SHAPES, [8, 32]):
        yield op, a, [shape], [ip], {}
    for k, ip, pp in itertools.product([1, 3, 256, 257], [1, 8, 9, 16], [1, 8, 16, 32]):
        yield "dense", {"units": "2", "use_bias": "False"}, [(1, k)], [ip, pp], {"w": (2, k)}
    for ip, pp, c in itertools.product([1, 8, 9], [1, 8, 9, 16], [1, 16, 17]):
        yield "conv2d", {"channels": "1", "kernel_size": "(1, 1)", "use_bias": "False"}, [(1, c, 2, 2)], [ip, pp], \
            {"w": (1, c, 1, 1)}
    for op, ip, pp in itertools.product(["elemwise_add", "elemwise_sub", "broadcast_add", "broadcast_mul",
                                         "broadcast_div", "broadcast_greater", "broadcast_max"],
                                        [0, 1, 8, 16, 31, 32, 33], [1, 8, 32, 33]):
        yield op, {}, [(2, 3)], [ip, pp], {"q": (2, 3)}


def g_broadcast():
    shapes: list[Shape] = [(), (1,), (3,), (2, 3), (2, 1), (1, 3), (2, 2, 3), (4, 1, 1, 3)]
    for op, a, b in itertools.product(["broadcast_add", "broadcast_div", "broadcast_greater"], shapes, shapes):
        yield op, {}, [a], [8], {"q": b}
    for op, a, b in itertools.product(["elemwise_add", "elemwise_sub", "broadcast_sub", "broadcast_mul",
                                       "broadcast_max"], [(), (3,), (2, 3), (2, 1)], [(), (1,), (2, 3), (1, 3)]):
        yield op, {}, [a], [8], {"q": b}


def g_concat_slice_like():
    for axis, b in itertools.product(["-3", "-2", "-1", "0", "1", "2"], [(2, 3), (1, 3), (2, 1), (3,)]):
        yield "concatenate", {"axis": axis}, [(2, 3)], [8], {"q": b}
    for axis, b in itertools.product([None, "()", "(0,)", "(-1,)", "(2,)", "(-3,)", "(0, 1)", "(1, 1)"],
                                     [(1, 2), (2, 3), (3, 4), (2,), (1, 1, 1)]):
        yield "slice_like", {"axis": axis} if axis else {}, [(2, 3)], [8], {"q": b}


def g_upsampling():
    for scale, shape in itertools.product(["-1", "0", "1", "2", "3"], [(1, 1, 2, 3), (2, 3), (1, 2, 1, 1)]):
        yield "upsampling", {"scale": scale}, [shape], [8], {}


def g_nms():
    for t, shape in itertools.product(["-129", "-1", "0", "1", "127", "128"], [(1, 4, 6), (2, 3, 2), (1, 2, 32),
                                                                               (1, 3, 1), (4, 6)]):
        yield "get_valid_counts", {"score_threshold": t}, [shape], [8], {}
    for a in product(coord_start=[None, "-1", "0", "3"], score_index=[None, "-1", "0", "5", "6"],
                     id_index=[None, "-1", "1", "5", "6"], force_suppress=[None, "True"]):
        yield "non_max_suppression", a, [(1, 4, 6)], [8], {"v": (1,)}
    for a in product(iou_threshold=[None, "-1", "0", "100", "101"], top_k=[None, "-2", "0", "1", "5"],
                     max_output_size=[None, "-2", "0", "2", "5"], return_indices=[None, "True"],
                     invalid_to_bottom=[None, "False"]):
        yield "non_max_suppression", a, [(1, 4, 6)], [8], {"v": (1,)}
    for shape, v in itertools.product([(2, 3, 6), (1, 4, 5), (1, 5, 2), (1, 4), (1, 1, 6)], [(1,), (2,), (1, 1)]):
        for a in product(coord_start=[None, "1", "2"], score_index=[None, "0", "4"], top_k=[None, "2"]):
            yield "non_max_suppression", a, [shape], [8], {"v": v}
    for n, a in itertools.product(["-1", "0", "1", "4", "5", "127"], product(top_k=[None, "1"],
                                                                           max_output_size=[None, "1"])):
        yield "non_max_suppression", a, [(1, 4, 6)], [8], {f"v{n}": (1,)}  # the valid count's value, in its name
    for n, shape in itertools.product(["-1", "0", "3", "9"], [(2, 4, 6)]):
        yield "non_max_suppression", {}, [shape], [8], {f"v{n}": (2,)}


def g_where():
    for a, b in itertools.product([(2, 3), (2,), (3,), ()], [(2, 3), (2,), (1, 3)]):
        yield "where", {}, [a], [8], {"x": b, "y": (2, 3)}


def g_zero_dims():
    """Inputs with a dim of 0 (no elements), and reshape codes past int32."""
    ops = [("relu", {}), ("flatten", {}), ("sum", {}), ("max", {}), ("max", {"axis": "(0,)"}), ("transpose", {}),
           ("tile", {"reps": "(2,)"}), ("repeat", {"repeats": "2"}), ("expand_dims", {"axis": "0"}),
           ("squeeze", {}), ("strided_slice", {"begin": "(0,)", "end": "(1,)"}), ("cvm_clip", {"precision": "4"}),
           ("clip", {"a_min": "-1", "a_max": "1"}), ("abs", {})]
    ops += [("reshape", {"shape": tup(c)}) for c in [(-1,), (0, -1), (-2,), (3, 0), (0, 0), (-1, 0), (-3,),
                                                      (-4, -1, 2), (-4, 0, -1), (-2, -1), (0,), (1, -1, 0)]]
    for (op, a), shape in itertools.product(ops, [(0,), (2, 0), (0, 3, 1)]):
        yield op, a, [shape], [8], {}
    big = [(4294967302,), (-4, 4294967298, -1), (-4, -1, 4294967298), (-4, 2, 4294967299), (-1, 4294967297),
           (2147483648, -1), (-1, -2147483649), (-4, -2147483647, -1), (9223372036854775807,), (-1, 3, 4294967296)]
    for codes, shape in itertools.product(big, [(6,), (2, 3)]):
        yield "reshape", {"shape": tup(codes)}, [shape], [8], {}


def g_strings():
    """The string and enum attributes: layouts, methods, dtypes, each known value and a few others."""
    conv = {"channels": "1", "kernel_size": "(1, 1)", "use_bias": "False"}
    for k, v in itertools.product(["layout", "kernel_layout", "out_layout", "out_dtype"],
                                  ["NCHW", "NHWC", "OIHW", "HWIO", "__undef__", "same", "int32", "int8", "float32",
                                   "", "nchw"]):
        yield "conv2d", {**conv, k: v}, [(1, 2, 3, 3)], [8], {"w": (1, 2, 1, 1)}
    for k, v in itertools.product(["layout", "method"], ["NCHW", "NHWC", "NEAREST_NEIGHBOR", "BILINEAR", "", "x"]):
        yield "upsampling", {"scale": "2", k: v}, [(1, 1, 2, 2)], [8], {}
    for v in ["NCHW", "NHWC", "", "nchw"]:
        yield "max_pool2d", {"pool_size": "(1, 1)", "layout": v}, [(1, 1, 2, 2)], [8], {}
    for op, v in itertools.product(["sum", "max"], ["int32", "int8", "int64", "float32", "uint8", "", "Int32"]):
        yield op, {"dtype": v}, [(2, 3)], [8], {}


# ---------------------------------------------------------------------------------------------------------
# Value grids: the runtime's behaviour depends on the values of the input and the params, not only on the
# attributes. A case's sixth element gives the values ({"data": [...], param name: [...]}, row-major); a param it
# does not name gets `param_values`'s. Many cases of a grid share one model and differ only in `data`, so a
# compiled backend replays them on one compile.
# ---------------------------------------------------------------------------------------------------------

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def bound(precision: int) -> int:
    """The largest value of a precision: 2^(p-1) - 1."""
    return (1 << (precision - 1)) - 1


def fit(values: list[int], precision: int) -> list[int]:
    """Values as an input of that precision can carry them: int8 bytes up to precision 8, else int32."""
    lo, hi = (-128, 127) if precision <= 8 else (I32_MIN, I32_MAX)
    return sorted({min(max(v, lo), hi) for v in values})


def near(*centres: int) -> list[int]:
    """Each value and its neighbours."""
    return [c + d for c in centres for d in (-1, 0, 1)]


def g_lut_values():
    """cvm_lut: the data are indices into the flattened table, clipped to [0, size - 1]: at, below and past the
    table, at the input's bounds; tables at their precision's bound and one past it."""
    for tshape, dp in itertools.product([(1,), (4,), (2, 2), (5,), (256,)], [8, 16, 32]):
        size = int(np.prod(tshape))
        idx = fit([*near(0, size - 1, size), -bound(dp) - 1, -bound(dp), bound(dp), bound(dp) + 1, 127, 255, 256,
                   I32_MIN, I32_MAX], dp)
        for k in range(0, len(idx), 8):
            part = idx[k:k + 8]
            yield "cvm_lut", {"in_dim": str(size)}, [(len(part),)], [dp], {"t": tshape}, {"data": part}
    for tp, edge in itertools.product([1, 2, 8, 16, 31, 32], [0, 1]):
        b = bound(tp) + edge
        table = [min(b, I32_MAX), -b, 0, min(b, 1)]  # past precision 32's bound: -2^31 only
        yield "cvm_lut", {"in_dim": "4"}, [(6,)], [8, tp], {"t": (4,)}, {"data": [-1, 0, 1, 2, 3, 4], "t": table}


def g_take_values():
    """take: indices below 0 and past the axis (the runtime clips them to [0, n - 1]), at int32's bounds, and
    index params at their precision's bound and one past it."""
    idx = [I32_MIN + 1, -2147483647, -6, -5, -3, -1, 0, 1, 2, 4, 5, 6, I32_MAX]
    for shape in [(5,), (2, 3), (2, 1, 3), (3, 2, 2)]:
        r = len(shape)
        for axis in [None, *map(str, range(-r, r))]:
            for ishape, vals in [((len(idx),), idx), ((2, 2), [-1, 0, 2, 3]), ((1,), [4])]:
                yield "take", {"axis": axis} if axis else {}, [shape], [8, 32], {"i": ishape}, {"i": vals}
    for ip, edge in itertools.product([1, 2, 8, 16, 31, 32], [0, 1]):
        b = bound(ip) + edge
        yield "take", {}, [(6,)], [8, ip], {"i": (4,)}, {"i": [min(b, I32_MAX), -b, 0, min(b, 1)]}
        yield "take", {"axis": "0"}, [(6,)], [8, ip], {"i": (2,)}, {"i": [-b, min(b, I32_MAX)]}


def g_clip_values():
    """clip and cvm_clip on data at the precision bounds, and the bounds themselves one either side: the input's
    saturation to +-(2^(p-1) - 1) at set_input, then the operator's."""
    for dp in [1, 2, 8, 9, 16, 31, 32]:
        b = bound(dp)
        xs = fit([*near(-b, 0, b), -b - 1, b + 1, I32_MIN, I32_MAX, -(1 << 15), 1 << 15], dp)
        edges = sorted({*near(-b, b), 0, I32_MIN, I32_MAX, -128, 127})
        for lo, hi in itertools.combinations(edges, 2):  # a_min < a_max: the attribute grid has the others
            yield "clip", {"a_min": str(lo), "a_max": str(hi)}, [(len(xs),)], [dp], {}, {"data": xs}
        for p in [1, 2, 7, 8, 9, 16, 31, 32]:
            c = bound(p)
            xs2 = fit([*xs, *near(-c, c), -c - 1, c + 1], dp)
            yield "cvm_clip", {"precision": str(p)}, [(len(xs2),)], [dp], {}, {"data": xs2}
            yield "cvm_clip", {"precision": str(p), "is_sign": "False"}, [(len(xs2),)], [dp], {}, {"data": xs2}


def _boxes(rows: list[list[int]], n: int | None = None) -> tuple[tuple[int, int, int], list[int]]:
    n = n or len(rows)
    rows = rows + [[-1] * 6] * (n - len(rows))
    return (1, n, 6), [v for r in rows for v in r]


NMS_SETS: list[list[list[int]]] = [
    # [id, score, x1, y1, x2, y2]: ties in score (the sort is stable), one id or two
    [[0, 9, 0, 0, 10, 10], [0, 9, 0, 0, 10, 5], [1, 9, 0, 0, 10, 10], [0, 8, 20, 20, 30, 30]],
    # iou exactly 50, 33, 25 with the first box; a box inside another; the same box twice
    [[0, 50, 0, 0, 10, 10], [0, 40, 0, 0, 10, 5], [0, 30, 5, 0, 15, 10], [0, 20, 0, 0, 5, 5], [0, 10, 0, 0, 10, 10]],
    # negative ids skipped, negative scores, zero and negative areas
    [[-1, 100, 0, 0, 10, 10], [0, 90, 0, 0, 10, 10], [2, -5, 0, 0, 0, 0], [2, -5, 0, 0, 0, 0], [3, 7, 10, 10, 0, 0],
     [3, 6, 10, 10, 0, 0], [0, -127, 1, 1, 2, 2]],
    # all scores equal, boxes of every overlap with the first
    [[0, 1, 0, 0, 100, 100], [0, 1, 0, 0, 100, 99], [0, 1, 0, 0, 100, 50], [0, 1, 0, 0, 100, 51],
     [0, 1, 0, 0, 100, 49], [0, 1, 50, 50, 127, 127]],
]
NMS_WIDE: list[list[list[int]]] = [
    # int32 differences that wrap, areas past 2^31, overlap * 100 past int64's range (not with a union below 100:
    # the runtime then divides by zero and dies, README "Decisions that differ from cvm-runtime")
    [[0, 5, -2147483647, -2147483647, 2147483647, 2147483647], [0, 4, -2147483647, -2147483647, 2147483647, 0],
     [0, 3, 0, 0, 2147483647, 65536], [0, 2, -1000000, -1000000, 1000000, 1000000]],
    [[0, 5, 0, 0, 2000000000, 2000000000], [0, 4, 0, 0, 2000000000, 1999999999], [0, 3, 0, 0, 1999999999,
                                                                                   2000000000]],
    [[1, 2147483647, 0, 0, 65536, 65536], [1, 2147483647, 0, 0, 65536, 65535], [1, -2147483647, 0, 0, 65536, 65536]],
]


def g_nms_values():
    """get_valid_counts with scores at, below and above the threshold, and ties; non_max_suppression with score
    ties, iou at the threshold and one either side, negative ids, degenerate and wrapping boxes, and valid counts
    below 0, at 0, at N and past it."""
    for t in [-128, -127, -1, 0, 1, 126, 127]:
        scores = [min(max(v, -128), 127) for v in [t - 1, t, t + 1, t, t + 1, -128, 127]]
        shape, x = _boxes([[j, v, 1, 2, 3, 4] for j, v in enumerate(scores)])
        yield "get_valid_counts", {"score_threshold": str(t)}, [shape], [8], {}, {"data": x}
    for t in [I32_MIN, -2147483647, 0, 2147483646, I32_MAX]:
        x = [0, t - 1, 0, 0, 1, 1, 1, t, 0, 0, 1, 1, 2, t + 1, 0, 0, 1, 1, 3, I32_MIN, 0, 0, 1, 1]
        x = [min(max(v, I32_MIN), I32_MAX) for v in x]
        yield "get_valid_counts", {"score_threshold": str(t)}, [(1, 4, 6)], [32], {}, {"data": x}
    yield "get_valid_counts", {"score_threshold": "0"}, [(2, 3, 2)], [8], {}, {"data": [0, 1, 0, 0, 0, 1, 5, -1,
                                                                                        5, 5, 5, 0]}
    for sets, dp in [(NMS_SETS, 8), (NMS_WIDE, 32)]:
        for boxes in sets:
            shape, x = _boxes(boxes, 8)
            n = shape[1]
            for a in product(iou_threshold=[None, "1", "25", "26", "33", "34", "51", "101"],
                             force_suppress=[None, "True"]):
                yield "non_max_suppression", a, [shape], [dp], {"v": (1,)}, {"data": x, "v": [len(boxes)]}
            for count in [-1, 0, 1, len(boxes) - 1, n, n + 1, 127]:
                yield "non_max_suppression", {}, [shape], [dp], {"v": (1,)}, {"data": x, "v": [count]}
            for a in [{"top_k": "0"}, {"top_k": "1"}, {"top_k": "2"}, {"max_output_size": "0"},
                      {"max_output_size": "1"}, {"top_k": "2", "max_output_size": "1"}]:
                yield "non_max_suppression", a, [shape], [dp], {"v": (1,)}, {"data": x, "v": [len(boxes)]}
    yield "non_max_suppression", {}, [(1, 8, 6)], [8, 32], {"v": (1,)}, {"data": _boxes(NMS_SETS[0], 8)[1],
                                                                         "v": [I32_MAX]}
    two = _boxes(NMS_SETS[1], 8)[1] + _boxes(NMS_SETS[3], 8)[1]
    for c0, c1 in itertools.product([-1, 0, 3, 8, 9], [0, 6, 9]):
        yield "non_max_suppression", {}, [(2, 8, 6)], [8], {"v": (2,)}, {"data": two, "v": [c0, c1]}


def partitions(n: int) -> Iterator[list[int]]:
    """Every storage plan of n entries up to renaming the ids: each set partition, as the ids of its blocks."""
    def go(prefix: list[int]) -> Iterator[list[int]]:
        if len(prefix) == n:
            yield prefix
            return
        for b in range(max(prefix, default=-1) + 2):
            yield from go([*prefix, b])
    yield from go([])


# Small graphs for the storage grid: [name, op, attrs, inputs] per node ("null": a variable, its attrs the shape
# and its inputs the precision), then the heads. Node 0 is `data`.
STORAGE_GRAPHS: dict[str, tuple[list, list[list[int]]]] = {
    "add": ([["data", "null", (2, 3), 8], ["p", "null", (2, 3), 8], ["y", "elemwise_add", {}, [[0, 0], [1, 0]]]],
            [[2, 0]]),
    "badd": ([["data", "null", (2, 3), 8], ["p", "null", (2, 3), 16], ["y", "broadcast_add", {}, [[0, 0], [1, 0]]]],
             [[2, 0]]),
    "sub_wide": ([["data", "null", (2, 3), 16], ["p", "null", (2, 3), 4],
                  ["y", "elemwise_sub", {}, [[1, 0], [0, 0]]]], [[2, 0]]),
    "two_params": ([["data", "null", (2, 3), 8], ["p", "null", (2, 3), 8], ["q", "null", (3,), 8],
                    ["y", "broadcast_mul", {}, [[1, 0], [2, 0]]], ["z", "elemwise_add", {}, [[3, 0], [0, 0]]]],
                   [[4, 0]]),
    "relu_then_param": ([["data", "null", (2, 3), 8], ["r", "relu", {}, [[0, 0]]], ["p", "null", (2, 3), 8],
                         ["y", "elemwise_add", {}, [[1, 0], [2, 0]]]], [[3, 0]]),
    "small_write": ([["data", "null", (2, 3), 8],
                     ["r", "strided_slice", {"begin": "(0, 0)", "end": "(1, 3)"}, [[0, 0]]],
                     ["p", "null", (2, 3), 8], ["y", "broadcast_add", {}, [[2, 0], [1, 0]]]], [[3, 0]]),
    "big_write": ([["data", "null", (2, 3), 8], ["r", "cvm_clip", {"precision": "4"}, [[0, 0]]],
                   ["p", "null", (4,), 8], ["y", "concatenate", {"axis": "0"}, [[2, 0], [2, 0]]],
                   ["z", "sum", {}, [[1, 0]]]], [[3, 0], [4, 0]]),
    "chain": ([["data", "null", (2, 3), 8], ["a", "negative", {}, [[0, 0]]], ["b", "abs", {}, [[1, 0]]],
               ["c", "elemwise_sub", {}, [[2, 0], [1, 0]]]], [[3, 0], [1, 0]]),
    "dense": ([["data", "null", (1, 4), 8], ["w", "null", (2, 4), 8], ["b", "null", (2,), 8],
               ["y", "dense", {"units": "2"}, [[0, 0], [1, 0], [2, 0]]]], [[3, 0]]),
}


def g_storage():
    """Storage plans: every set partition of a small graph's entries into storage ids. The runtime runs each
    tensor at the start of its id's buffer; a read may see another tensor's values (cvmc follows it), or the
    plan is refused (an operator's output in its input's buffer), or cvmc refuses it as not modelled."""
    for name, (spec, _) in STORAGE_GRAPHS.items():
        for plan in partitions(len(spec)):  # one entry a node
            yield "storage", {"graph": name, "storage": plan}


def storage_files(case: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """(model.json, params.bin, input bytes) of a storage grid row: its graph, declared shapes and precisions as
    cvmc infers them, the fixed patterns as values, and the row's storage ids."""
    spec, heads = STORAGE_GRAPHS[case["graph"]]
    nodes: list[Node] = []
    params = {}
    for k, (name, op, attrs, inputs) in enumerate(spec):
        if op == "null":
            nodes.append(Node(name, "null", shapes=(attrs,), precisions=(inputs,)))
            if name != "data":
                params[name] = np.array(pattern(int(np.prod(attrs)), inputs, seed=k), dtype=np.int32).reshape(attrs)
            continue
        a = rules.parse_attrs(op, attrs)
        ins = [tuple(x) for x in inputs]
        sig = rules.infer(op, a, [nodes[i].shapes[j] for i, j in ins], [nodes[i].precisions[j] for i, j in ins])
        nodes.append(Node(name, op, ins, a, tuple(sig.shapes), tuple(sig.precisions)))
    doc = graph_to_json(Graph(nodes, [tuple(h) for h in heads], params))
    doc["attrs"]["storage_id"][1] = case["storage"]
    data = nodes[0]
    x = np.array(pattern(int(np.prod(data.shapes[0])), data.precisions[0]),
                 dtype="<i1" if data.precisions[0] <= 8 else "<i4")
    return json.dumps(doc).encode(), write_params(params), x.tobytes()


GRIDS: dict[str, Callable[[], Iterator[tuple[str, dict[str, str], list[Shape], list[int], dict[str, Shape]]]]] = {
    "reshape": g_reshape, "strided_slice": g_strided_slice, "transpose": g_transpose, "squeeze": g_squeeze,
    "expand_dims": g_expand_dims, "tile": g_tile, "repeat": g_repeat, "sum_max": g_reduce,
    "max_pool2d": g_max_pool2d, "conv2d": g_conv2d, "dense": g_dense, "take": g_take, "cvm_lut": g_cvm_lut,
    "clip": g_clip, "cvm_clip": g_cvm_clip, "shift": g_shift, "precisions": g_precisions, "broadcast": g_broadcast,
    "concatenate_slice_like": g_concat_slice_like, "upsampling": g_upsampling, "nms": g_nms, "where": g_where,
    "zero_dims": g_zero_dims, "strings": g_strings,
    "lut_values": g_lut_values, "take_values": g_take_values, "clip_values": g_clip_values,
    "nms_values": g_nms_values, "storage": g_storage,
}
"""Each grid: (op, attrs, input shapes, [data precision, (param precision)], {param name: shape}[, values])."""


def param_values(op: str, name: str, shape: Shape, k: int, precision: int,
                 given: dict[str, list[int]] | None = None) -> np.ndarray:
    """A param's values: those a value grid gives, indices of both signs and past the ends for take, for
    non_max_suppression a valid count of 3 (or the one its name `v<count>` gives), else the fixed pattern within
    the param's precision."""
    n = int(np.prod(shape, dtype=np.int64))
    if given and name in given:
        vals = given[name]
    elif op == "take":
        vals = [(-3, 0, 2, 7, 1, -1)[i % 6] for i in range(n)]
    elif op == "non_max_suppression":
        vals = [int(name[1:]) if len(name) > 1 else 3] * n
    else:
        vals = pattern(n, precision, seed=k)
    return np.array(vals, dtype=np.int32).reshape(shape)


def declared(op: str, attrs: dict[str, str], shapes: list[Shape], precs: list[int]) -> tuple[list, list]:
    """cvmc's output shapes and precisions for the file (the input's shape, twice for two outputs, and precision
    8 where its rules refuse)."""
    n_out = 2 if op == "get_valid_counts" else 1
    try:
        a = rules.parse_attrs(op, attrs)
        out = rules.infer_shape(op, a, shapes)
    except Exception:
        return [list(shapes[0])] * n_out, [8] * n_out
    try:
        p = list(rules.infer_precision(op, a, shapes, precs, out))
    except Exception:
        p = [8] * len(out)
    return [list(s) for s in out], [x if 0 < x <= 32 else 8 for x in p]


def model_files(case: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """(model.json, params.bin, input bytes) of a case row: op, attrs, shapes (inputs), precs, params (names in
    input order), out (declared output shapes), oprec (declared output precisions), and values (the data's and
    params' values, where a value grid gives them)."""
    if "graph" in case:
        return storage_files(case)
    op, shapes, precs = case["op"], [tuple(s) for s in case["shapes"]], case["precs"]
    names = list(case.get("params", {}))
    pp = precs[1] if len(precs) > 1 else 8
    data_prec = precs[0]
    nodes = [Node("data", "null", shapes=(shapes[0],), precisions=(data_prec,))]
    params = {}
    for k, name in enumerate(names, start=1):
        params[name] = param_values(op, name, shapes[k], k, pp, case.get("values"))
        nodes.append(Node(name, "null", shapes=(shapes[k],), precisions=(pp,)))
    nodes.append(Node(f"{op}_0", op, inputs=[(i, 0) for i in range(len(nodes))],
                      shapes=tuple(tuple(s) for s in case["out"]), precisions=tuple(case["oprec"])))
    heads = case.get("heads", range(len(case["out"])))
    doc = graph_to_json(Graph(nodes, [(len(nodes) - 1, k) for k in heads], params))
    doc["attrs"]["op_attrs"][1][-1] = json.dumps(case["attrs"])
    n = int(np.prod(shapes[0], dtype=np.int64))
    given = case.get("values", {}).get("data")
    x = np.array(given if given is not None else pattern(n, data_prec), dtype="<i1" if data_prec <= 8 else "<i4")
    return json.dumps(doc).encode(), write_params(params), x.tobytes()


def cases(grid: str) -> Iterator[dict[str, Any]]:
    if grid == "storage":
        for op, spec in g_storage():
            yield {"grid": grid, "op": op, **spec}
        return
    for op, attrs, shapes, precs, params, *values in GRIDS[grid]():
        all_shapes = [list(s) for s in shapes] + [list(s) for s in params.values()]
        all_precs = precs + ([8] if params and len(precs) == 1 else [])
        out, oprec = declared(op, attrs, [tuple(s) for s in all_shapes], all_precs)
        row = {"grid": grid, "op": op, "attrs": attrs, "shapes": all_shapes, "precs": all_precs, "params": list(params),
               "out": out, "oprec": oprec, **({"values": values[0]} if values else {})}
        if values and op == "get_valid_counts":  # two heads of other row counts: the API refuses to concat them
            yield from ({**row, "heads": [k]} for k in (0, 1))
        else:
            yield row


EXPECTED = re.compile(r"Check output shape failed, expected to be \[([-0-9,]*)\]")
GAS = re.compile(r"ops\(gas\)=(\d+)")


def run_runtime(run_model: str, tmp: pathlib.Path, case: dict[str, Any], prefix: list[str] | None = None
                ) -> tuple[str, bytes, str]:
    """The runtime's decision on a case, its declared output shapes first set to the runtime's own."""
    for _ in range(3):
        js, pb, inp = model_files(case)
        (tmp / "m.json").write_bytes(js)
        (tmp / "p.bin").write_bytes(pb)
        (tmp / "i.bin").write_bytes(inp)
        cmd = [*(prefix or []), run_model, "--device", "formal", "--api-bytes", "-o", str(tmp / "o.bin"),
               str(tmp / "m.json"), str(tmp / "p.bin"), str(tmp / "i.bin")]
        (tmp / "o.bin").unlink(missing_ok=True)
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=120)
        except subprocess.TimeoutExpired:
            return "hang", b"", ""
        err = r.stderr.decode(errors="replace")
        status = {0: "ok", 11: "logic", 12: "runtime", 3: "input"}.get(r.returncode, "crash")
        m = EXPECTED.search(err)
        if status == "logic" and m and "out" in case:
            want = [int(x) for x in m.group(1).split(",") if x]
            k = next((i for i, s in enumerate(case["out"]) if s != want), None)
            if k is not None:
                case["out"] = [*case["out"][:k], want, *case["out"][k + 1:]]
                continue
        return status, (tmp / "o.bin").read_bytes() if status == "ok" else b"", err
    return status, b"", err


def run_cvmc(case: dict[str, Any], device: str) -> tuple[str, bytes, str, int]:
    """cvmc's decision on a case: (status, output bytes, message, gas)."""
    import cvmc

    js, pb, inp = model_files(case)
    try:
        m = cvmc.load_model(js, pb, device=device)
        return "ok", bytes(m.infer(inp)), "", m.graph.gas
    except cvmc.CVMLogicError as e:
        return "logic", b"", str(e), -1
    except cvmc.CVMRuntimeError as e:
        return "runtime", b"", str(e), -1


def digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:16]


def why_of(err: str) -> str:
    i = err.find("Check failed")
    return (err[i + 14:i + 70] if i >= 0 else (err.strip().splitlines() or [""])[-1][:56]).replace("\n", " ").strip()


def probe(run_model: str, case: dict[str, Any], device: str, valgrind: bool) -> dict[str, Any]:
    """Run one case through both; the row to store, with `diff` (a verdict) where they differ."""
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        status, out, err = run_runtime(run_model, tmp, case)
        row = {k: case[k] for k in ("grid", "op", "attrs", "shapes", "precs", "params", "out", "oprec", "values",
                                     "heads", "graph", "storage") if k in case}
        row.update(status=status, hash=digest(out) if status == "ok" else "", why=why_of(err) if status not in (
            "ok", "crash") else "")
        gm = GAS.search(err)
        row["gas"] = int(gm.group(1)) if gm and status == "ok" else -1
        if status in ("input", "hang"):
            return row
        mine = run_cvmc(case, device)
        undefined = mine[0] == "logic" and "undefined in cvm-runtime" in mine[2]
        if undefined:
            row["deviation"] = True
        if status == "crash":
            if not undefined:
                row["diff"] = f"runtime crashed ({err.strip()[-60:]!r}); cvmc {mine[0]}: {mine[2][:100]}"
            return row
        same = mine[0] == status and (status != "ok" or (mine[1] == out and mine[3] == row["gas"]))
        if same:
            return row
        verdict, detail = classify(run_model, tmp, (status, out, err), mine[:3], len(model_files(case)[2]), 3,
                                   valgrind)
        row["verdict"] = verdict
        if verdict == "documented limit":
            row["limit"] = True  # defined and clean in the runtime; cvmc refuses it as `not modelled by cvmc`
        elif verdict == "defined" and undefined:
            row["verdict"] = "source"  # valgrind-clean, but the source reads past a vector (DEVIATIONS)
        elif verdict == "defined" or (verdict in ("unstable", "memory error") and not undefined):
            gas = f" gas runtime {row['gas']} cvmc {mine[3]}" if status == mine[0] == "ok" else ""
            row["diff"] = f"{verdict}: runtime {status} ({row['why']}); cvmc {mine[0]} ({mine[2][:120]}){gas}"
        return row


def read_rows() -> list[dict[str, Any]]:
    """The stored rows (tests/data/consensus/grid.jsonl.gz)."""
    return [json.loads(line) for line in gzip.decompress(OUT.read_bytes()).decode().splitlines()]


def cpu_sample(rows: list[dict[str, Any]], every_refusal: bool = True) -> list[dict[str, Any]]:
    """The rows a compiled backend replays: the first accepted row of each (operator, input ranks, output ranks)
    class, and every refusal (the loader decides it before any compile), or with `every_refusal` False the first
    of each (operator, status, message) class."""
    seen, out = set(), []
    for r in rows:
        accepted = r["status"] == "ok" and "deviation" not in r and "limit" not in r
        if accepted:  # a storage grid row: its graph
            key: tuple = (r["op"], r.get("graph"), tuple(map(len, r.get("shapes", []))),
                          tuple(map(len, r.get("out", []))))
        else:
            key = (r["op"], r["status"], r["why"], "deviation" in r, "limit" in r) if not every_refusal else (id(r),)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", required=True, help="cvm-runtime's run_model driver (tests/consensus/ORACLE.md)")
    ap.add_argument("--op", action="append", choices=sorted(GRIDS), help="a grid (default: every grid)")
    ap.add_argument("--device", default="reference")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--write", action="store_true", help=f"store the rows in {OUT.relative_to(HERE.parents[1])}")
    ap.add_argument("--no-valgrind", action="store_true")
    ap.add_argument("--show", type=int, default=8)
    args = ap.parse_args()
    valgrind = not args.no_valgrind and shutil.which("valgrind") is not None
    rows_out = []
    for grid in args.op or list(GRIDS):
        tally = collections.Counter()
        with ThreadPoolExecutor(args.jobs) as ex:
            rows = list(ex.map(lambda c: probe(args.oracle, c, args.device, valgrind), cases(grid)))
        shown = 0
        for r in rows:
            tally["tried"] += 1
            tally[r["status"]] += 1
            tally["undefined"] += "deviation" in r
            tally["source"] += r.get("verdict") == "source"
            tally["limit"] += "limit" in r
            if "diff" in r:
                tally["differ"] += 1
                if shown < args.show:
                    shown += 1
                    print(f"  {r['op']} {r.get('attrs', r.get('graph'))} {r.get('shapes', r.get('storage'))}: "
                          f"{r['diff']}")
        print(f"{grid}: {tally['tried']} tried, {tally['differ']} differ; runtime ok {tally['ok']}, logic "
              f"{tally['logic']}, runtime {tally['runtime']}, crash {tally['crash']}; cvmc undefined "
              f"{tally['undefined']} ({tally['source']} of them runs valgrind finds clean); cvmc not modelled "
              f"{tally['limit']}", flush=True)
        rows_out += [{k: v for k, v in r.items() if k not in ("diff", "verdict")} for r in rows if "diff" not in r
                     and (r["status"] in ("ok", "logic", "runtime") or r["status"] == "crash" and "deviation" in r)]
    if args.write:  # the grids run now replace their rows; the others' stay
        done = set(args.op or GRIDS)
        kept = [r for r in (read_rows() if OUT.exists() else []) if r["grid"] not in done]
        order = {g: i for i, g in enumerate(GRIDS)}
        rows_all = sorted(kept + rows_out, key=lambda r: order[r["grid"]])  # stable: a grid's own order
        text = "".join(json.dumps(r, separators=(",", ":"), sort_keys=True) + "\n" for r in rows_all)
        OUT.write_bytes(gzip.compress(text.encode(), 9, mtime=0))
        print(f"{len(rows_out)} rows written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
