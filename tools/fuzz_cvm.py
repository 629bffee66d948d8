"""A seeded differential fuzzer: random valid CVM graphs of the 37 operators, reference vs a device, bit for bit.

    python -m cvmc.tools.fuzz_cvm --count 2000 [--seed 0] [--device cpu] [--ops 12] [--save DIR]

Each graph grows from the input by random operators on random earlier tensors (attributes drawn within the
operators' rules; a draw the rules reject is simply skipped), with a few heads, and runs on random inputs that
include the precision's extremes. Draws lean toward the rules' bounds: precisions 1, 2, 8, 16, 17, 31 and 32,
shift amounts at their limits, values at 2^(p-1) - 1 and exact powers of two, clip bounds at +-(2^31 - 2),
conv2d and dense operands of exactly 16 and 17 bits (the int16 path's bound) and NMS boxes whose overlap
overflows int64 when multiplied by 100. Graph `i` of seed `s` depends only on `(s, i)`, so a failure is replayed with
`--seed s --start i --count 1`; `--save DIR` writes each failing model's files there. Compiled code is cached in
a temporary folder unless `$CVMC_CACHE_DIR` is set. `--cache-attacks` also replaces each graph's cache entry (a
flipped byte, a truncation, another graph's entry, a raw or self-hashed object, a forged tag, a link, a fifo, in
turn) and requires the next compile to refuse it and agree with the reference. Exit status 1 on any mismatch or
crash.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError
from cvmc.runtime.builder import CvmBuilder, Tensor
from cvmc.runtime.frontend.graph import Graph, save_graph
from cvmc.runtime.model import Model
from cvmc.runtime.references.cvm import run_graph

MAX_ELEMENTS = 4096
BOUND_PRECISIONS = (1, 2, 8, 16, 17, 31, 32)  # the rules' limits, the int16 path's bound and its neighbours


@dataclass
class _Gen:
    """One graph being grown: the builder, the tensors made so far, and the random source."""

    rng: np.random.Generator
    b: CvmBuilder
    pool: list[Tensor] = field(default_factory=list)

    def pick(self, want: Callable[[Tensor], bool] = lambda t: True) -> Tensor | None:
        choices = [t for t in self.pool if want(t)]
        return choices[int(self.rng.integers(len(choices)))] if choices else None

    def pick_or(self, chance: float, want: Callable[[Tensor], bool], make: Callable[[], Tensor]) -> Tensor:
        """With probability `chance` an earlier tensor that fits `want`, else (or when none fits) a new one."""
        found = self.pick(want) if self.rng.random() < chance else None
        return found if found is not None else make()

    def int(self, lo: int, hi: int) -> int:
        """A uniform integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def precision(self, lo: int = 1, hi: int = 32) -> int:
        """A precision in [lo, hi], one of the bounds (BOUND_PRECISIONS, lo, hi) a third of the time."""
        if self.rng.random() < 1 / 3:
            bounds = sorted({p for p in BOUND_PRECISIONS if lo <= p <= hi} | {lo, hi})
            return int(self.rng.choice(bounds))
        return self.int(lo, hi)

    def values(self, shape: tuple[int, ...], precision: int) -> np.ndarray:
        bound = rules.precision_bound(precision)
        v = self.rng.integers(-bound, bound + 1, size=shape, dtype=np.int64)
        if v.size and self.rng.random() < 0.3:  # the extremes: +-(2^(p-1) - 1)
            v.flat[self.rng.integers(v.size, size=max(1, v.size // 8))] = bound * self.rng.choice([-1, 1])
        if v.size and precision > 1 and self.rng.random() < 0.2:  # exact powers of two within the precision
            powers = 1 << self.rng.integers(0, precision - 1, size=max(1, v.size // 8))
            v.flat[self.rng.integers(v.size, size=powers.size)] = powers * self.rng.choice([-1, 1], size=powers.size)
        return v.astype(np.int32)

    def param(self, shape: tuple[int, ...], precision: int | None = None) -> Tensor:
        p = precision if precision is not None else self.int(1, 8) if self.rng.random() < 0.8 else self.int(9, 20)
        return self.b.create_param(self.values(shape, p), p)

    def narrow(self, t: Tensor, precision: int = 8) -> Tensor:
        """`t` brought down to at most `precision` bits (by a right shift or a clip) when it is wider; sometimes,
        instead, values of exactly 16 or 17 bits behind a `where` that declares precision 2 (the bound of the
        int16 path of conv2d and dense, which reads the values' bits, not the declared precision)."""
        if t.precision >= 17 and self.rng.random() < 0.2:
            wide = self.b.cvm_clip(t, precision=int(self.rng.choice([16, 17])))
            return self.b.where(self.param(t.shape, 2), wide, wide)
        if t.precision <= precision:
            return t
        if self.rng.random() < 0.5:
            return self.b.cvm_clip(t, precision=precision)
        return self.b.cvm_right_shift(t, precision=precision, shift_bit=max(1, min(32, t.precision - precision)))

    def shape_like(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts against `shape`: a suffix of it with some dims set to 1."""
        keep = shape[self.int(0, len(shape) - 1):]
        return tuple(1 if self.rng.random() < 0.4 else d for d in keep)


def _small(t: Tensor) -> bool:
    return prod(t.shape) <= MAX_ELEMENTS


def _unary(g: _Gen) -> Tensor | None:
    t = g.pick()
    assert t is not None
    b = g.b
    op = g.rng.choice(["relu", "abs", "negative", "cvm_precision", "clip", "cvm_clip", "cvm_right_shift",
                       "cvm_left_shift"])
    if op == "clip":
        if g.rng.random() < 0.2:  # the widest clip of precision 32, or one of width 1
            top = (1 << 31) - 2
            return b.clip(t, a_min=-top, a_max=top) if g.rng.random() < 0.5 else b.clip(t, a_min=-1, a_max=0)
        lo = g.int(-300, 100)
        return b.clip(t, a_min=lo, a_max=lo + g.int(1, 300))
    if op == "cvm_clip":
        return b.cvm_clip(t, precision=g.precision())
    if op == "cvm_right_shift":
        shift = g.int(1, 32) if g.rng.random() < 0.7 else int(g.rng.choice([1, 31, 32]))
        return b.cvm_right_shift(t, precision=g.precision(), shift_bit=shift)
    if op == "cvm_left_shift":
        if t.precision >= 32:
            return None
        most = 32 - t.precision  # input precision + shift_bit <= 32
        shift = g.int(1, most) if g.rng.random() < 0.7 else most
        return b.cvm_left_shift(t, precision=g.precision(), shift_bit=shift)
    return getattr(b, op)(t)


def _binary(g: _Gen) -> Tensor | None:
    picked = g.pick()
    assert picked is not None
    a: Tensor = picked
    op = str(g.rng.choice(["elemwise_add", "elemwise_sub", "broadcast_add", "broadcast_sub", "broadcast_mul",
                           "broadcast_max", "broadcast_div", "broadcast_greater"]))
    if op.startswith("elemwise"):
        other = g.pick_or(0.6, lambda t: t.shape == a.shape, lambda: g.param(a.shape))
    else:
        other = g.pick_or(0.4, lambda t: _broadcastable(t.shape, a.shape), lambda: g.param(g.shape_like(a.shape)))
        if op == "broadcast_mul" and a.precision + other.precision > 32:
            return None
        if g.rng.random() < 0.5:
            a, other = other, a
    return getattr(g.b, op)(a, other)


def _broadcastable(x: tuple[int, ...], y: tuple[int, ...]) -> bool:
    return all(p == q or p == 1 or q == 1 for p, q in zip(reversed(x), reversed(y)))


def _conv2d(g: _Gen) -> Tensor | None:
    t = g.pick(lambda t: len(t.shape) == 4)
    if t is None:
        return None
    x = g.narrow(t)
    n, c, h, w = x.shape
    groups = g.rng.choice([d for d in range(1, c + 1) if c % d == 0]) if g.rng.random() < 0.3 else 1
    oc = int(groups) * g.int(1, 3)
    kh, kw = g.int(1, min(3, h + 2)), g.int(1, min(3, w + 2))
    weight = g.param((oc, c // int(groups), kh, kw), g.int(1, 8))
    bias = g.param((oc,), g.int(1, 16)) if g.rng.random() < 0.5 else None
    return g.b.conv2d(x, weight, bias, channels=oc, kernel_size=(kh, kw), strides=(g.int(1, 2), g.int(1, 2)),
                      padding=(g.int(0, 2), g.int(0, 2)), dilation=(g.int(1, 2), g.int(1, 2)), groups=int(groups),
                      use_bias=bias is not None)


def _dense(g: _Gen) -> Tensor | None:
    t = g.pick(lambda t: len(t.shape) == 2)
    if t is None:
        t = g.pick(lambda t: len(t.shape) > 2)
        if t is None:
            return None
        t = g.b.flatten(t)
    x = g.narrow(t)
    units = g.int(1, 12)
    bias = g.param((units,), g.int(1, 16)) if g.rng.random() < 0.5 else None
    return g.b.dense(x, g.param((units, x.shape[1]), g.int(1, 8)), bias, units=units, use_bias=bias is not None)


def _pool(g: _Gen) -> Tensor | None:
    t = g.pick(lambda t: len(t.shape) == 4)
    if t is None:
        return None
    b = g.b
    if g.rng.random() < 0.3:
        return b.upsampling(t, scale=g.int(1, 3)) if prod(t.shape) * 9 <= MAX_ELEMENTS else None
    ph, pw = g.int(1, 3), g.int(1, 3)
    pad = (g.int(0, ph - 1),) if g.rng.random() < 0.5 else (g.int(0, ph - 1), g.int(0, pw - 1))
    return b.max_pool2d(t, pool_size=(ph, pw), strides=(g.int(1, 2), g.int(1, 2)), padding=pad,
                        ceil_mode=bool(g.rng.random() < 0.5))


def _detection(g: _Gen) -> Tensor | None:
    b = g.b
    t = g.pick(lambda t: len(t.shape) == 3 and 2 <= t.shape[2] < 32)
    if t is None or g.rng.random() < 0.3:
        n = g.int(1, 12)
        huge = g.rng.random() < 0.5  # sides near 2^30: 100 x overlap overflows int64 (iou's other branch)
        p = 31 if huge else 8
        rows = g.values((g.int(1, 2), n, 6), 8)
        rows[:, :, 0] = g.rng.integers(-1, 3, size=rows.shape[:2])
        rows[:, :, 2:4] = np.abs(rows[:, :, 2:4]) // 2
        rows[:, :, 4:6] = rows[:, :, 2:4] + np.abs(rows[:, :, 4:6]) // 2
        if huge:
            rows[:, :, 4:6] = rows[:, :, 2:4] + g.rng.integers(3 << 27, (1 << 30) - 200, size=(*rows.shape[:2], 2))
        t = b.create_param(rows, p)
    count, boxes = b.get_valid_counts(t, score_threshold=g.int(-20, 40))
    g.pool.append(count)
    if boxes.shape[2] != 6 or g.rng.random() < 0.3 and t.precision != 31:
        return boxes
    return b.non_max_suppression(boxes, count, iou_threshold=g.int(1, 90), force_suppress=bool(g.rng.random() < 0.3),
                                 top_k=g.int(-1, boxes.shape[1]), max_output_size=g.int(-1, boxes.shape[1]))


def _layout(g: _Gen) -> Tensor | None:
    t = g.pick()
    assert t is not None
    b = g.b
    n = len(t.shape)
    op = g.rng.choice(["flatten", "reshape", "expand_dims", "squeeze", "transpose", "strided_slice", "slice_like",
                       "repeat", "tile", "concatenate"])
    if op == "flatten":
        return b.flatten(t)
    if op == "reshape":
        codes = list(t.shape)
        i = g.int(0, n - 1)
        choice = g.int(0, 3)
        if choice == 0:
            codes = [-1]
        elif choice == 1 and n >= 2 and i < n - 1:
            codes = codes[:i] + [-3] + codes[i + 2:]
        elif choice == 2:
            codes = [0] * i + [-2]
        else:
            d = t.shape[i]
            f = g.rng.choice([k for k in range(1, d + 1) if d % k == 0])
            codes = codes[:i] + [-4, int(f), -1] + codes[i + 1:]
        return b.reshape(t, shape=tuple(codes))
    if op == "expand_dims":
        return b.expand_dims(t, axis=g.int(-n - 1, n), num_newaxis=g.int(1, 2)) if n < 5 else None
    if op == "squeeze":
        ones = [i for i, d in enumerate(t.shape) if d == 1]
        axes = tuple(i - n if g.rng.random() < 0.5 else i for i in ones if g.rng.random() < 0.7)
        return b.squeeze(t, axis=axes)
    if op == "transpose":
        return b.transpose(t, axes=tuple(int(i) for i in g.rng.permutation(n)) if g.rng.random() < 0.8 else ())
    if op == "strided_slice":
        begin, end, stride = [], [], []
        for d in t.shape:
            if g.rng.random() < 0.7:
                lo = g.int(0, d - 1)
                hi = g.int(lo + 1, d)
                s = g.int(1, 3)
            else:  # a negative stride walks from begin down to end (exclusive; -1 is written below -dim)
                lo = g.int(0, d - 1)
                hi = g.int(-1, lo - 1)
                s = -g.int(1, 3)
            begin.append(lo - d if g.rng.random() < 0.3 else lo)
            end.append(-d - 1 if hi < 0 else hi - d if hi < d and g.rng.random() < 0.3 else hi)
            stride.append(s)
        k = g.int(1, n)
        return b.strided_slice(t, begin=tuple(begin[:k]), end=tuple(end[:k]), stride=tuple(stride[:k]))
    if op == "slice_like":
        like = g.param(tuple(g.int(1, d) for d in t.shape))
        axes = tuple(i for i in range(n) if g.rng.random() < 0.5)
        return b.slice_like(t, like, axis=axes)
    if op == "repeat":
        return b.repeat(t, repeats=g.int(1, 3), axis=g.int(-n, n - 1)) if prod(t.shape) * 3 <= MAX_ELEMENTS else None
    if op == "tile":
        reps = tuple(g.int(1, 2) for _ in range(g.int(1, n + 1)))
        return b.tile(t, reps=reps) if prod(t.shape) * prod(reps) <= MAX_ELEMENTS else None
    ax = g.int(-n, n - 1)
    first: Tensor = t
    others = [g.pick_or(1.0, lambda u: len(u.shape) == n and all(u.shape[i] == first.shape[i] for i in range(n)
                                                              if i != ax % n), lambda: first)
              for _ in range(g.int(0, 2))]
    return b.concatenate(first, *others, axis=ax)


def _gather(g: _Gen) -> Tensor | None:
    t = g.pick()
    assert t is not None
    b = g.b
    op = g.rng.choice(["take", "cvm_lut", "where", "sum", "max"])
    if op == "take":
        shape = tuple(g.int(1, 4) for _ in range(g.int(1, 2)))
        axis = None if g.rng.random() < 0.4 else g.int(-len(t.shape), len(t.shape) - 1)
        n = prod(t.shape) if axis is None else t.shape[axis]
        idx = b.create_param(g.rng.integers(-2, n + 2, size=shape), 8) if n < 120 else g.param(shape, 8)
        return b.take(t, idx, axis=axis)
    if op == "cvm_lut":
        table = g.param((g.int(1, 40),))
        return b.cvm_lut(t, table, in_dim=table.shape[0])
    if op == "where":
        if g.rng.random() < 0.3 and len(t.shape) == 1:  # a condition per row of a wider x: undefined (DEVIATIONS)
            cond = g.param((t.shape[0],), 2)
        else:
            cond = g.pick(lambda u: u.shape == t.shape) or g.param(t.shape, 2)
        return b.where(cond, t, g.pick(lambda u: u.shape == t.shape) or g.param(t.shape))
    n = len(t.shape)
    axes = tuple(i - n if g.rng.random() < 0.5 else i for i in range(n) if g.rng.random() < 0.5)
    attrs = {"axis": axes, "keepdims": bool(g.rng.random() < 0.5), "exclude": bool(g.rng.random() < 0.3)}
    if op == "sum":
        return b.sum(t, **attrs)
    return b.max(t, **attrs)


_KINDS: list[tuple[float, Callable[[_Gen], Tensor | None]]] = [
    (4, _unary), (4, _binary), (2, _conv2d), (1.5, _dense), (1.5, _pool), (0.8, _detection), (4, _layout),
    (3, _gather),
]


def random_graph(seed: int, index: int, n_ops: int = 8) -> tuple[Graph, np.ndarray]:
    """Graph `index` of `seed` and a random input for it."""
    return grow_graph(np.random.default_rng([seed, index]), f"fuzz_{seed}_{index}", n_ops)


def grow_graph(rng: np.random.Generator, name: str, n_ops: int = 8) -> tuple[Graph, np.ndarray]:
    """A graph of up to `n_ops` operators and an input for it, every choice drawn from `rng` (a numpy Generator,
    or anything with its `integers`, `random`, `choice` and `permutation`: the property tests pass hypothesis's
    draws, which shrink a failing graph to its smallest)."""
    g = _Gen(rng, CvmBuilder(name))
    rank = g.int(1, 4)
    shape = tuple(g.int(1, 6) for _ in range(rank))
    if rank == 4 and rng.random() < 0.7:
        shape = (g.int(1, 2), g.int(1, 4), g.int(3, 9), g.int(3, 9))
    precision = g.precision(1, 8) if rng.random() < 0.7 else g.precision(9, 32)
    x = g.b.create_input(shape, precision)
    g.pool.append(x)
    weights = np.array([w for w, _ in _KINDS])
    made = 0
    for _ in range(n_ops * 4):
        if made >= n_ops:
            break
        kind = _KINDS[int(rng.choice(len(_KINDS), p=weights / weights.sum()))][1]
        try:
            t = kind(g)
        except CVMError:
            continue
        if t is not None and _small(t):
            g.pool.append(t)
            made += 1
    ops = [t for t in g.pool if t is not x] or [x]
    heads = {(ops[-1].node, ops[-1].index): ops[-1]}
    for t in ops[:-1]:
        if rng.random() < 0.25:
            heads[(t.node, t.index)] = t
    for t in g.b.sinks():  # every result nothing reads is checked too (else its kernel would not even run)
        if _small(t):
            heads.setdefault((t.node, t.index), t)
    graph = g.b.graph(list(heads.values()))
    data = g.values(shape, precision)
    return graph, data


def _save(graph: Graph, directory: str) -> None:
    """cvm-runtime's model.json and params.bin of a graph (`save_graph`: cvmc's one writer)."""
    save_graph(graph, directory)


def check(graph: Graph, data: np.ndarray, device: str = "cpu") -> str | None:
    """None when the device agrees with the reference on every head, else what differs."""
    want = run_graph(graph, data)
    got = Model.from_graph(graph, device).run(data)
    if len(got) != len(want):
        return f"{len(got)} heads, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or not np.array_equal(g, w):
            bad = np.flatnonzero(g.reshape(-1) != w.reshape(-1)) if g.shape == w.shape else []
            where = f" at {len(bad)} elements, first flat index {bad[0]}" if len(bad) else f" shape {g.shape}"
            return f"head {i} differs{where}"
    return None


# --------------------------------------------------------------------------------------------------------------
# Planted and tampered cache entries
# --------------------------------------------------------------------------------------------------------------

CACHE_ATTACKS = ("flip a byte", "truncate", "another graph's entry", "a raw object", "the old self-hashed format",
                 "an empty file", "a symlink to a valid entry", "a fifo", "a forged tag")  # fmt: skip


def _plant(path: str, attack: str, rng: np.random.Generator, other: bytes) -> None:
    """Replace the cache entry at `path` the way `attack` says (`other`: a valid entry of another graph)."""
    import hashlib

    from cvmc.runtime.engine.store import HEADER_BYTES, seal

    with open(path, "rb") as f:
        good = f.read()
    header = HEADER_BYTES
    foreign = other[header:]  # another graph's machine code
    os.unlink(path)
    if attack == "a symlink to a valid entry":
        with open(path + ".saved", "wb") as f:
            f.write(good)
        os.symlink(os.path.abspath(path) + ".saved", path)
        return
    if attack == "a fifo":
        os.mkfifo(path)
        return
    if attack == "flip a byte":
        flipped = bytearray(good)
        flipped[int(rng.integers(len(good)))] ^= 1 << int(rng.integers(8))
        data = bytes(flipped)
    elif attack == "truncate":
        data = good[:int(rng.integers(len(good)))]
    elif attack == "another graph's entry":
        data = other
    elif attack == "a raw object":
        data = foreign
    elif attack == "the old self-hashed format":
        data = b"cvmc-obj-1\n" + hashlib.sha256(foreign).digest() + foreign
    elif attack == "a forged tag":
        data = seal(b"guessed key " * 3, os.path.basename(path), foreign)
    else:
        data = b""
    with open(path, "wb") as f:
        f.write(data)


def check_cache_attack(graph: Graph, data: np.ndarray, attack: str, rng: np.random.Generator,
                       other: bytes | None) -> tuple[str | None, bytes]:
    """Compile `graph` on the cpu (its object lands in the cache), replace the entry by `attack`, compile again:
    the second compile must refuse the entry (no cache hit) and agree with the reference. Returns (what went
    wrong or None, the graph's valid entry, for the next graph's "another graph's entry")."""
    from cvmc.runtime.devices.cpu import compile_graph
    from cvmc.runtime.engine.cache import default_dir

    folder = default_dir()
    assert folder is not None
    first = compile_graph(graph)
    path = os.path.join(folder, f"{first.engine.key}.{first.engine.kind}")  # its code: a shared object or objects
    with open(path, "rb") as f:
        good = f.read()
    if other is None or other == good:
        other = good if attack != "another graph's entry" else None
    if other is None:
        return None, good  # no other graph yet: nothing to swap in
    _plant(path, attack, rng, other)
    try:
        again = compile_graph(graph)
    finally:
        if os.path.exists(path + ".saved"):
            os.unlink(path + ".saved")
    want = run_graph(graph, data)
    got = again(data)
    if again.stats["cache_hit"]:
        return f"cache attack '{attack}': the planted entry was used", good
    if any(g.shape != w.shape or not np.array_equal(g, w) for g, w in zip(got, want)):
        return f"cache attack '{attack}': the recompiled model differs from the reference", good
    return None, good


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0, help="index of the first graph")
    p.add_argument("--ops", type=int, default=8, help="operators per graph")
    p.add_argument("--device", default="cpu")
    p.add_argument("--save", help="write the files of each failing model into this directory")
    p.add_argument("--cache-attacks", action="store_true",
                   help="also plant or tamper each graph's cache entry (one attack a graph, in turn) and require "
                        "a refused entry and an exact recompile")  # fmt: skip
    a = p.parse_args(argv)
    if "CVMC_CACHE_DIR" in os.environ:
        return _run(a)
    with tempfile.TemporaryDirectory(prefix="cvmc-fuzz-") as cache:  # one-off models stay out of the user's cache
        os.environ["CVMC_CACHE_DIR"] = cache
        try:
            return _run(a)
        finally:
            del os.environ["CVMC_CACHE_DIR"]


def _run(a: argparse.Namespace) -> int:
    failures = 0
    ops_seen: set[str] = set()
    start = time.perf_counter()
    other: bytes | None = None
    attacks = 0
    for i in range(a.start, a.start + a.count):
        try:
            graph, data = random_graph(a.seed, i, a.ops)
            ops_seen.update(n.op for n in graph.nodes if not n.is_variable)
            problem = check(graph, data, a.device)
            if problem is None and a.cache_attacks:
                attack = CACHE_ATTACKS[i % len(CACHE_ATTACKS)]
                problem, other_next = check_cache_attack(graph, data, attack, np.random.default_rng([a.seed, i]),
                                                         other)  # fmt: skip
                attacks += other is not None or attack != "another graph's entry"
                other = other_next
        except Exception as e:  # a crash is a finding too
            graph = None
            problem = "crashed: " + "".join(traceback.format_exception_only(type(e), e)).strip()
        if problem is not None:
            failures += 1
            print(f"seed {a.seed} graph {i}: {problem}", flush=True)
            if a.save and graph is not None:
                _save(graph, os.path.join(a.save, f"fuzz_{a.seed}_{i}"))
    planted = f", {attacks} planted or tampered cache entries" if a.cache_attacks else ""
    print(f"{a.count} graphs, {len(ops_seen)} operators{planted}, {failures} failures, "
          f"{time.perf_counter() - start:.1f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
