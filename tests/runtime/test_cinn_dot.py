"""The register-blocked float Dot (`cvmc.passes.loops.cinn_dot`): within the sequential bound of the exact sum in
the default order (fma per step), the mul-then-add sequential bits under `exact_float`, the same bits on 1 and 2
threads, every edge of the blocks (rows MR, cols NR, depth KC: at the size, one past it, one short)."""

import numpy as np
import pytest

from cvmc import CinnBuilder
from cvmc.passes.loops.cinn_dot import BLOCK

pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")
# The block a compile takes follows the host's vector width (`host_vector_bytes`): the tests run on the host of the
# `host` fixture (`make test-hosts`: each simulated one), and the edges of both widths' blocks are tested on each.
pytestmark = pytest.mark.hosts

RNG = np.random.default_rng(27)


@pytest.fixture(autouse=True)
def _host(host):
    return host


def block(width: int) -> tuple[int, int, int]:
    """The block a compile for vector registers of `width` bytes takes: rows MR, depth KC, f32 columns NR."""
    mr, registers, kc = BLOCK[width]
    return mr, kc, registers * width // 4


def edges(width: int) -> list[tuple[int, int, int]]:
    mr, kc, nr = block(width)
    return [(mr, kc, nr), (mr + 1, kc + 1, nr + 1), (mr - 1, kc - 1, nr - 1), (2 * mr + 1, 2 * kc + 3, 2 * nr + 7)]
EPS = {np.float32: 2.0**-24, np.float64: 2.0**-53}


def run(x, w, *, exact_float=False, threads=1, transpose=(False, False)):
    b = CinnBuilder("k")
    u, v = b.create_input(x.dtype.name, x.shape, "x"), b.create_input(w.dtype.name, w.shape, "w")
    u = b.transpose(u, [1, 0]) if transpose[0] else u
    v = b.transpose(v, [1, 0]) if transpose[1] else v
    return b.compile([b.dot(u, v)], device="cpu", exact_float=exact_float, threads=threads)(x=x, w=w)[0]


def sequential(x, w):
    """out[i, j] = (...((0 + x[i, 0] w[0, j]) + x[i, 1] w[1, j]) ...), each product and sum rounded."""
    acc = np.zeros((x.shape[0], w.shape[1]), x.dtype)
    for t in range(x.shape[1]):
        acc = acc + np.outer(x[:, t], w[t, :]).astype(x.dtype)
    return acc


SHAPES = [(1, 1, 1), (1, 7, 1), (1, 300, 5), (5, 3, 1), *dict.fromkeys(edges(32) + edges(64)), (13, 17, 19),
          (37, 5, 97), (3, 3 * 256, 5)]


@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_default_order_within_the_sequential_bound_and_the_same_on_two_threads(m, k, n, dtype):
    """Against numpy's float64 product: for f32 its error is far below the bound; for f64 it has a bound of its
    own (numpy's order), so there the two bounds add up."""
    x = RNG.uniform(-1, 1, (m, k)).astype(dtype)
    w = RNG.uniform(-1, 1, (k, n)).astype(dtype)
    got = run(x, w)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    magnitude = np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64)
    bound = (1 if dtype == np.float32 else 2) * k * EPS[dtype] * magnitude
    assert got.dtype == dtype and got.shape == (m, n)
    assert np.all(np.abs(got - exact) <= bound)
    np.testing.assert_array_equal(run(x, w, threads=2), got)


@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_float_is_the_sequential_mul_then_add(m, k, n, dtype):
    x = RNG.uniform(-3, 3, (m, k)).astype(dtype)
    w = RNG.uniform(-3, 3, (k, n)).astype(dtype)
    want = sequential(x, w)
    np.testing.assert_array_equal(run(x, w, exact_float=True), want)
    np.testing.assert_array_equal(run(x, w, exact_float=True, threads=2), want)


def test_fma_rounds_once():
    """A product whose low bits cancel against the accumulator: fma keeps them, mul-then-add loses them."""
    a = np.float32(1 + 2.0**-12)
    x = np.array([[a, a]], np.float32)
    w = np.array([[a], [-a]], np.float32)  # 0 + a*a, then fma(a, -a, rounded a*a) = rounded(a*a) - a*a exactly
    lost = np.float32(a * a) - np.float64(a) * np.float64(a)
    assert run(x, w)[0, 0] == np.float32(lost) != 0
    assert run(x, w, exact_float=True)[0, 0] == 0


@pytest.mark.parametrize("transpose", [(True, False), (False, True), (True, True)])
def test_transposed_operands_as_the_backward_pass_builds_them(host, transpose):
    mr, kc, nr = block(host.vector_bytes)
    m, k, n = mr * 3 + 2, kc + 5, nr * 2 + 3
    x = RNG.uniform(-1, 1, (k, m) if transpose[0] else (m, k)).astype(np.float32)
    w = RNG.uniform(-1, 1, (n, k) if transpose[1] else (k, n)).astype(np.float32)
    xs, ws = (x.T if transpose[0] else x), (w.T if transpose[1] else w)
    np.testing.assert_array_equal(run(x, w, exact_float=True, transpose=transpose), sequential(xs, ws))
    plain = run(np.ascontiguousarray(xs), np.ascontiguousarray(ws))
    np.testing.assert_array_equal(run(x, w, transpose=transpose), plain)


def test_special_values_propagate():
    x = np.array([[np.nan, 1.0], [np.inf, 1.0], [0.0, -0.0]], np.float32)
    w = np.array([[1.0, 0.0], [2.0, -0.0]], np.float32)
    for exact in (False, True):
        got = run(x, w, exact_float=exact)
        assert np.isnan(got[0]).all() and got[1, 0] == np.inf and np.isnan(got[1, 1])  # inf * 0 is NaN
        assert got[2, 0] == 0 and not np.signbit(got[2, 0])  # 0 + 0*1 + -0*2 = +0
