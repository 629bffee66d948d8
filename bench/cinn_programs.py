"""Whole programs of cinn primitives built with CinnBuilder, against PyTorch (eager and torch.compile) and numpy.

Programs, as a CINN user writes them from the primitives: an MLP forward and backward (Dot, BroadcastTo, Max,
Reduce, Select, Transpose), a conv block forward and backward (Conv forward, backward_data, backward_filter,
BnMeanVariance, BnGradBiasScale), softmax and layer norm, and a long element-wise chain. Each runs on cvmc's cpu
device (cinn-mark-views + cinn-fuse + convert-cinn-to-loops, LLVM JIT) with 1 and 2 threads, and the same math
in PyTorch eager, torch.compile (where it works here) and numpy (its own threading; numpy has no thread knob at
run time). Prints the median time, GFLOP/s and the ratios; checks cvmc against numpy within 1e-3 relative.
cvmc runs with its default float order (sums over the innermost axis in 16 lanes, exp as vector arithmetic);
`--exact-float` times the sequential order instead (`CinnBuilder.compile(..., exact_float=True)`).

    python bench/cinn_programs.py [--repeat N] [--exact-float]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from cvmc import CinnBuilder

RNG = np.random.default_rng(0)


def _timeit(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _f32(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# Each program: (name, flops, inputs, cinn(b, *vars) -> outputs, math(xp, *arrays) -> outputs) where xp offers
# the few functions both numpy and torch name alike through the small shims below.


def mlp(m=128, k=512, h=512, n=128):
    def cinn(b, x, w1, b1, w2, dy):
        hh = b.add(b.dot(x, w1), b.broadcast_to(b1, [m, h], [1]))
        zero = b.const_scalar(0.0, "zero")
        r = b.max(hh, zero)
        y = b.dot(r, w2)
        dw2 = b.dot(b.transpose(r, [1, 0]), dy)
        dr = b.dot(dy, b.transpose(w2, [1, 0]))
        dh = b.select(b.compare(hh, zero, "gt"), dr, b.broadcast_to(zero, [m, h], []))
        dw1 = b.dot(b.transpose(x, [1, 0]), dh)
        db1 = b.reduce(dh, "sum", [0])
        return y, dw1, db1, dw2

    def math(t, x, w1, b1, w2, dy):
        hh = x @ w1 + b1
        r = t.maximum(hh, 0 * hh)
        y = r @ w2
        dh = t.where(hh > 0, dy @ w2.T, 0 * hh)
        return y, x.T @ dh, dh.sum(0), r.T @ dy

    flops = 2 * (m * k * h + m * h * n + h * m * n + m * n * h + k * m * h)
    return "MLP fwd+bwd 128x512x512x128", flops, [_f32(m, k), _f32(k, h), _f32(h), _f32(h, n), _f32(m, n)], cinn, math


def conv_block(n=4, c=16, hw=16):
    def cinn(b, x, w, dy):
        y = b.conv(x, w, paddings=(1, 1))
        s, ss = b.bn_mean_variance(y)
        mean = b.div(s, b.const_scalar(float(n * hw * hw), "count"))
        dx = b.conv(w, dy, paddings=(1, 1), conv_type="backward_data", output_shape=[n, c, hw, hw])
        dw = b.conv(x, dy, paddings=(1, 1), conv_type="backward_filter", output_shape=[c, c, 3, 3])
        db, dscale = b.bn_grad_bias_scale(y, dy, mean)
        return y, ss, dx, dw, db, dscale

    def math(t, x, w, dy):
        y = t.conv(x, w)
        mean = y.sum((0, 2, 3)) / (n * hw * hw)
        dx, dw = t.conv_grads(x, w, dy)
        dscale = (dy * (y - mean.reshape(1, -1, 1, 1))).sum((0, 2, 3))
        return y, (y * y).sum((0, 2, 3)), dx, dw, dy.sum((0, 2, 3)), dscale

    conv = 2 * n * c * c * 9 * hw * hw
    flops = 3 * conv + 6 * n * c * hw * hw
    return f"conv block fwd+bwd {n}x{c}x{hw}x{hw}", flops, [_f32(n, c, hw, hw), _f32(c, c, 3, 3), _f32(n, c, hw, hw)], \
        cinn, math


def softmax(m=256, n=1024):
    def cinn(b, x):
        e = b.exp(b.sub(x, b.reduce(x, "max", [-1], True)))
        return (b.div(e, b.reduce(e, "sum", [-1], True)),)

    def math(t, x):
        e = t.exp(x - x.max(-1, keepdims=True)) if t.is_numpy else t.exp(x - x.amax(-1, keepdim=True))
        return (e / (e.sum(-1, keepdims=True) if t.is_numpy else e.sum(-1, keepdim=True)),)

    return f"softmax {m}x{n}", 5 * m * n, [_f32(m, n)], cinn, math


def layer_norm(m=256, n=1024):
    def cinn(b, x, g, beta):
        inv_n = b.const_scalar(1.0 / n, "inv_n")
        mean = b.mul(b.reduce(x, "sum", [-1], True), inv_n)
        c = b.sub(x, mean)
        var = b.mul(b.reduce(b.mul(c, c), "sum", [-1], True), inv_n)
        r = b.rsqrt(b.add(var, b.const_scalar(1e-5, "eps")))
        return (b.add(b.mul(b.mul(c, r), g), beta),)

    def math(t, x, g, beta):
        keep = {"keepdims": True} if t.is_numpy else {"keepdim": True}
        mean = x.sum(-1, **keep) * (1.0 / n)
        c = x - mean
        var = (c * c).sum(-1, **keep) * (1.0 / n)
        return (c * (1 / t.sqrt(var + 1e-5)) * g + beta,)

    return f"layer norm {m}x{n}", 8 * m * n, [_f32(m, n), _f32(n), _f32(n)], cinn, math


def chain(size=1 << 20, length=16):
    def cinn(b, x):
        y = x
        for i in range(length // 4):
            y = b.mul(b.add(y, b.const_scalar(0.5 + i, f"a{i}")), b.const_scalar(0.25, f"m{i}"))
            y = b.max(b.sub(y, x), b.negative(y))
        return (y,)

    def math(t, x):
        y = x
        for i in range(length // 4):
            y = (y + (0.5 + i)) * 0.25
            y = t.maximum(y - x, -y)
        return (y,)

    return f"element-wise chain {length} ops x 1M", length * size, [_f32(size)], cinn, math


class _Numpy:
    is_numpy = True
    exp, sqrt, maximum, where = np.exp, np.sqrt, np.maximum, np.where

    @staticmethod
    def conv(x, w):
        import numpy.lib.stride_tricks as st

        p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = st.sliding_window_view(p, (3, 3), axis=(2, 3))  # n c h w kh kw
        return np.einsum("nchwpq,ocpq->nohw", win, w, optimize=True)

    @staticmethod
    def conv_grads(x, w, dy):
        import numpy.lib.stride_tricks as st

        p = np.pad(dy, ((0, 0), (0, 0), (1, 1), (1, 1)))
        dx = np.einsum("nohwpq,ocpq->nchw", st.sliding_window_view(p, (3, 3), axis=(2, 3)), w[:, :, ::-1, ::-1],
                       optimize=True)
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        dw = np.einsum("nchwpq,nohw->ocpq", st.sliding_window_view(xp, (3, 3), axis=(2, 3)), dy, optimize=True)
        return dx, dw


def _torch_shim(torch):
    class T:
        is_numpy = False
        exp, sqrt, maximum, where = torch.exp, torch.sqrt, torch.maximum, torch.where

        @staticmethod
        def conv(x, w):
            return torch.nn.functional.conv2d(x, w, padding=1)

        @staticmethod
        def conv_grads(x, w, dy):
            dx = torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1)
            dw = torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1)
            return dx, dw

    return T


def main(repeat: int = 10, exact_float: bool = False) -> int:
    try:
        import torch
    except ImportError:
        torch = None
        print("PyTorch is not installed (pip install -e '.[bench]'): its columns are left empty")
    rows, ok = [], True
    for make in (mlp, conv_block, softmax, layer_norm, chain):
        name, flops, arrays, cinn, math = make()
        want = math(_Numpy, *arrays)
        row = {"name": name, "flops": flops, "numpy": _timeit(lambda: math(_Numpy, *arrays), repeat)}
        b = CinnBuilder("prog")
        vs = [b.create_input("float32", a.shape, f"a{i}") for i, a in enumerate(arrays)]
        outs = list(cinn(b, *vs))
        feed = {f"a{i}": a for i, a in enumerate(arrays)}
        for threads in (1, 2):
            fn = b.compile(outs, device="cpu", threads=threads, exact_float=exact_float)
            row[f"cvmc{threads}"] = _timeit(lambda: fn(**feed), repeat)
            got = fn(**feed)
            for g, w in zip(got, want):
                scale = float(np.max(np.abs(w))) or 1.0
                ok &= bool(np.allclose(g, w, rtol=1e-3, atol=1e-3 * scale))
            if torch is not None:
                torch.set_num_threads(threads)
                t_shim, targs = _torch_shim(torch), [torch.from_numpy(a) for a in arrays]
                with torch.no_grad():
                    row[f"eager{threads}"] = _timeit(lambda: math(t_shim, *targs), repeat)
                    try:
                        compiled = torch.compile(lambda *a: math(t_shim, *a))
                        compiled(*targs)
                        row[f"compile{threads}"] = _timeit(lambda: compiled(*targs), repeat)
                    except Exception as e:  # no C++ compiler, an unsupported op...
                        row[f"compile{threads}"] = None
                        row["compile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
        rows.append(row)

    def ms(t):
        return f"{t * 1e3:8.2f}ms" if t else f"{'-':>10}"

    def ratio(a, b):
        return f"{a / b:6.2f}x" if a and b else f"{'-':>7}"

    print(f"\n{'cinn program':36} {'T':>2} {'cvmc':>10} {'GFLOP/s':>8} {'eager':>10} {'compile':>10} {'numpy':>10} "
          f"{'eager/cvmc':>10} {'compile/cvmc':>12} {'numpy/cvmc':>10}")
    for r in rows:
        for t in (1, 2):
            c = r[f"cvmc{t}"]
            print(f"{r['name']:36} {t:>2} {ms(c)} {r['flops'] / c / 1e9:8.2f} {ms(r.get(f'eager{t}'))} "
                  f"{ms(r.get(f'compile{t}'))} {ms(r['numpy'])} {ratio(r.get(f'eager{t}'), c):>10} "
                  f"{ratio(r.get(f'compile{t}'), c):>12} {ratio(r['numpy'], c):>10}")
        if "compile_error" in r:
            print(f"  torch.compile failed: {r['compile_error']}")
    print("ratios > 1: cvmc is faster; numpy runs with its own threading in both rows;",
          "results " + ("match numpy within 1e-3" if ok else "DIFFER from numpy"))
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--exact-float", action="store_true", help="float reductions and exp in the sequential order")
    args = ap.parse_args()
    raise SystemExit(main(args.repeat, args.exact_float))
