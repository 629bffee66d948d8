"""Whole programs of cinn primitives built with CinnBuilder, against PyTorch (eager and torch.compile), ONNX
Runtime and numpy.

Programs, as a CINN user writes them from the primitives: an MLP forward and backward (Dot, BroadcastTo, Max,
Reduce, Select, Transpose), a conv block forward and backward (Conv forward, backward_data, backward_filter,
BnMeanVariance, BnGradBiasScale), softmax, layer norm, a long element-wise chain, a transformer block (layer
norm, Dot, softmax, gelu with erf, residuals) and a conv net training step (two convs with relu, global pooling, a
dense layer, softmax cross-entropy's gradient, the backward pass and an SGD update). Each runs on cvmc's cpu
device (cinn-mark-views + cinn-fuse + convert-cinn-to-loops, LLVM JIT) with 1 and 2 threads, side by side with the
same math in PyTorch eager, torch.compile (where it works here), ONNX Runtime (the torch math exported with
torch.onnx.export, run with as many intra-op threads; where onnxruntime is installed: the bench extra) and numpy
(its own threading; numpy has no thread knob at run time). The systems of one program and thread count run in
interleaved rounds of 5 calls, each after 0.1 s idle (so no peer's still-spinning threads share the cores with the
next one); numpy, a reference rather than a peer, runs alone after them (its BLAS threads spin on every core, a
hyperthread sibling of the measured one among them, for longer than that idle); medians of all calls. Prints the
median time, GFLOP/s and the ratios; checks cvmc against numpy within 1e-3 relative. cvmc runs with its default
float order (sums over the innermost axis in 16 lanes, exp, log, tanh, erf as vector arithmetic, convs as
padded-row micro-kernels); `--exact-float` times the sequential order and libm instead (`CinnBuilder.compile(...,
exact_float=True)`); `--cvmc-only` times cvmc alone (to compare two checkouts in one run: run this file with each
checkout's python).

    python bench/cinn_programs.py [--repeat N] [--exact-float] [--cvmc-only] [--only NAME,...] [--kernels]
                                  [--dot-block MR,NR,KC] [--avx2] [--cooldown SECONDS]

`--kernels` prints, instead of the table, each program's kernels one by one at 1 thread: the median of `repeat` x 5
runs of the kernel alone (its data hot in cache), then of its runs in the program's order (the kernels run one
by one after a call of the program, on its buffers: the data as the kernels before left it), and the call's own
median: where a program's time goes, on whatever host.
`--dot-block` compiles cvmc's float Dots with another register block than this host's default (see
bench/cinn_dot_blocks.py, which ranks them). `--avx2` runs every system as an AVX2-only host would, on an AVX-512
one (`emulate_avx2`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from cvmc import CinnBuilder

RNG = np.random.default_rng(0)


def _interleaved(systems: dict[str, object], rounds: int, block: int = 5, cooldown: float = 0.1) -> dict[str, float]:
    """Each system's median seconds per call: `rounds` rounds, each running every system in turn for `block`
    back-to-back calls after `cooldown` idle seconds (a peer's worker threads, still spinning after its last call,
    would otherwise take a core from the next system on a small machine). A system is a callable, or a pair
    (prepare, callable) whose prepare runs before each of its blocks (torch's thread count is process-wide)."""
    runs = {name: sys if isinstance(sys, tuple) else (None, sys) for name, sys in systems.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for prepare, fn in runs.values():  # a warm-up call each
        if prepare:
            prepare()
        fn()
    for _ in range(rounds):
        for name, (prepare, fn) in runs.items():
            if prepare:
                prepare()
            time.sleep(cooldown)
            for _ in range(block):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


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


def _layer_norm(b, x, g, beta, n):
    inv_n = b.const_scalar(1.0 / n, "inv_n")
    mean = b.mul(b.reduce(x, "sum", [-1], True), inv_n)
    c = b.sub(x, mean)
    var = b.mul(b.reduce(b.mul(c, c), "sum", [-1], True), inv_n)
    r = b.rsqrt(b.add(var, b.const_scalar(1e-5, "eps")))
    return b.add(b.mul(b.mul(c, r), g), beta)


def _layer_norm_math(t, x, g, beta, n):
    keep = {"keepdims": True} if t.is_numpy else {"keepdim": True}
    c = x - x.sum(-1, **keep) * (1.0 / n)
    var = (c * c).sum(-1, **keep) * (1.0 / n)
    return c * (1 / t.sqrt(var + 1e-5)) * g + beta


def transformer(s=128, d=256, hidden=1024):
    """One pre-norm transformer block of one head: x + attention(ln(x)), then + mlp(ln(.)) with gelu (erf)."""

    def cinn(b, x, g1, b1, wq, wk, wv, wo, g2, b2, w1, w2):
        h = _layer_norm(b, x, g1, b1, d)
        q, k, v = b.dot(h, wq), b.dot(h, wk), b.dot(h, wv)
        scores = b.mul(b.dot(q, b.transpose(k, [1, 0])), b.const_scalar(d**-0.5, "scale"))
        e = b.exp(b.sub(scores, b.reduce(scores, "max", [-1], True)))
        p = b.div(e, b.reduce(e, "sum", [-1], True))
        x1 = b.add(x, b.dot(b.dot(p, v), wo))
        u = b.dot(_layer_norm(b, x1, g2, b2, d), w1)
        half = b.const_scalar(0.5, "half")
        erf = b.erf(b.mul(u, b.const_scalar(0.5**0.5, "rsqrt2")))
        gelu = b.mul(b.mul(u, half), b.add(erf, b.const_scalar(1.0, "one")))
        return (b.add(x1, b.dot(gelu, w2)),)

    def math(t, x, g1, b1, wq, wk, wv, wo, g2, b2, w1, w2):
        h = _layer_norm_math(t, x, g1, b1, d)
        scores = (h @ wq) @ (h @ wk).T * d**-0.5
        e = t.exp(scores - (scores.max(-1, keepdims=True) if t.is_numpy else scores.amax(-1, keepdim=True)))
        p = e / (e.sum(-1, keepdims=True) if t.is_numpy else e.sum(-1, keepdim=True))
        x1 = x + (p @ (h @ wv)) @ wo
        u = _layer_norm_math(t, x1, g2, b2, d) @ w1
        return (x1 + (u * 0.5 * (t.erf(u * 0.5**0.5) + 1.0)) @ w2,)

    flops = 2 * s * d * d * 4 + 2 * 2 * s * s * d + 2 * 2 * s * d * hidden + 16 * s * d + 10 * s * hidden
    scale = [_f32(d, d) * d**-0.5 for _ in range(4)]
    arrays = [_f32(s, d), _f32(d), _f32(d), *scale, _f32(d), _f32(d), _f32(d, hidden) * d**-0.5,
              _f32(hidden, d) * hidden**-0.5]  # fmt: skip
    return f"transformer block {s}x{d}, mlp {hidden}", flops, arrays, cinn, math


def convnet_step(n=8, c0=3, c=16, hw=32, classes=10, lr=0.01):
    """A training step of conv(3 -> 16) relu conv(16 -> 16) relu, global average pooling, dense, softmax
    cross-entropy against one-hot targets: the forward pass, the backward pass and the SGD update of the three
    weights (the updated weights are the outputs)."""
    area = hw * hw

    def cinn(b, x, w1, w2, wd, target):
        zero = b.const_scalar(0.0, "zero")
        h1 = b.conv(x, w1, paddings=(1, 1))
        a1 = b.max(h1, zero)
        h2 = b.conv(a1, w2, paddings=(1, 1))
        a2 = b.max(h2, zero)
        pooled = b.mul(b.reduce(a2, "sum", [2, 3]), b.const_scalar(1.0 / area, "inv_area"))
        logits = b.dot(pooled, wd)
        e = b.exp(b.sub(logits, b.reduce(logits, "max", [-1], True)))
        prob = b.div(e, b.reduce(e, "sum", [-1], True))
        dlogits = b.mul(b.sub(prob, target), b.const_scalar(1.0 / n, "inv_n"))
        dwd = b.dot(b.transpose(pooled, [1, 0]), dlogits)
        dpooled = b.mul(b.dot(dlogits, b.transpose(wd, [1, 0])), b.const_scalar(1.0 / area, "inv_area2"))
        da2 = b.broadcast_to(dpooled, [n, c, hw, hw], [0, 1])
        dh2 = b.select(b.compare(h2, zero, "gt"), da2, b.broadcast_to(zero, [n, c, hw, hw], []))
        dw2 = b.conv(a1, dh2, paddings=(1, 1), conv_type="backward_filter", output_shape=[c, c, 3, 3])
        da1 = b.conv(w2, dh2, paddings=(1, 1), conv_type="backward_data", output_shape=[n, c, hw, hw])
        dh1 = b.select(b.compare(h1, zero, "gt"), da1, b.broadcast_to(zero, [n, c, hw, hw], []))
        dw1 = b.conv(x, dh1, paddings=(1, 1), conv_type="backward_filter", output_shape=[c, c0, 3, 3])
        rate = b.const_scalar(lr, "lr")
        return tuple(b.sub(w, b.mul(dw, rate)) for w, dw in ((w1, dw1), (w2, dw2), (wd, dwd)))

    def math(t, x, w1, w2, wd, target):
        h1 = t.conv(x, w1)
        a1 = t.maximum(h1, 0 * h1)
        h2 = t.conv(a1, w2)
        a2 = t.maximum(h2, 0 * h2)
        pooled = a2.sum((2, 3)) * (1.0 / area)
        logits = pooled @ wd
        e = t.exp(logits - (logits.max(-1, keepdims=True) if t.is_numpy else logits.amax(-1, keepdim=True)))
        prob = e / (e.sum(-1, keepdims=True) if t.is_numpy else e.sum(-1, keepdim=True))
        dlogits = (prob - target) * (1.0 / n)
        da2 = ((dlogits @ wd.T) * (1.0 / area)).reshape(n, c, 1, 1) + 0 * h2
        dh2 = t.where(h2 > 0, da2, 0 * h2)
        da1, dw2 = t.conv_grads(a1, w2, dh2)
        dh1 = t.where(h1 > 0, da1, 0 * h1)
        _, dw1 = t.conv_grads(x, w1, dh1)
        return w1 - dw1 * lr, w2 - dw2 * lr, wd - (pooled.T @ dlogits) * lr

    conv1, conv2 = 2 * n * c * c0 * 9 * area, 2 * n * c * c * 9 * area
    flops = 2 * conv1 + 3 * conv2 + 12 * n * c * area
    target = np.eye(classes, dtype=np.float32)[RNG.integers(0, classes, n)]
    arrays = [_f32(n, c0, hw, hw), _f32(c, c0, 3, 3) * 0.3, _f32(c, c, 3, 3) * 0.1, _f32(c, classes), target]
    return f"conv net train step {n}x{c0}x{hw}x{hw}", flops, arrays, cinn, math


PROGRAMS = {"mlp": mlp, "conv_block": conv_block, "softmax": softmax, "layer_norm": layer_norm, "chain": chain,
            "transformer": transformer, "convnet_step": convnet_step}  # fmt: skip


def _numpy_erf():
    try:
        from scipy.special import erf

        return erf
    except ImportError:  # scipy comes with scikit-learn (dev, bench); without it, one libm call an element
        import math

        return np.vectorize(math.erf, otypes=[np.float32])


class _Numpy:
    is_numpy = True
    exp, sqrt, maximum, where, erf = np.exp, np.sqrt, np.maximum, np.where, staticmethod(_numpy_erf())

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


def _torch_shim(torch, exportable: bool = False):
    """The math's functions in torch; `exportable`: conv's gradients as conv_transpose2d and a conv of transposed
    tensors (what torch.onnx.export maps to ONNX's ConvTranspose and Conv), the same math."""
    conv2d = torch.nn.functional.conv2d

    class T:
        is_numpy = False
        exp, sqrt, maximum, where, erf = torch.exp, torch.sqrt, torch.maximum, torch.where, torch.erf

        @staticmethod
        def conv(x, w):
            return conv2d(x, w, padding=1)

        @staticmethod
        def conv_grads(x, w, dy):
            if exportable:
                dx = torch.nn.functional.conv_transpose2d(dy, w, padding=1)
                return dx, conv2d(x.transpose(0, 1), dy.transpose(0, 1), padding=1).transpose(0, 1)
            dx = torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1)
            dw = torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1)
            return dx, dw

    return T


def _onnx_session(torch, ort, math, arrays: list[np.ndarray], threads: int):
    """The math exported to ONNX (torch.onnx.export, opset 17) in an ONNX Runtime session of `threads`
    intra-op threads, as a function of the arrays."""
    import io
    import warnings

    shim = _torch_shim(torch, exportable=True)

    class Program(torch.nn.Module):
        def forward(self, *args):
            return math(shim, *args)

    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Program(), tuple(torch.from_numpy(a) for a in arrays), f, dynamo=False, opset_version=17)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(f.getvalue(), options, providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(session.get_inputs(), arrays)}
    return lambda: session.run(None, feed)


def _close(got, want) -> bool:
    ok = True
    for g, w in zip(got, want, strict=True):
        scale = float(np.max(np.abs(w))) or 1.0
        ok &= bool(np.allclose(g, w, rtol=1e-3, atol=1e-3 * scale))
    return ok


def built(arrays: list[np.ndarray], cinn) -> tuple[CinnBuilder, list, dict[str, np.ndarray]]:
    """A program's builder (inputs a0, a1, ... of `arrays`' shapes), its outputs and the inputs to feed it."""
    b = CinnBuilder("prog")
    vs = [b.create_input("float32", a.shape, f"a{i}") for i, a in enumerate(arrays)]
    return b, list(cinn(b, *vs)), {f"a{i}": a for i, a in enumerate(arrays)}


def kernels(repeat: int, exact_float: bool = False, only: str = "",
            dot_block: tuple[int, int, int] | None = None) -> int:
    """Each program's kernels timed alone at 1 thread, then in the program's order (see the module docstring)."""
    for key, make in PROGRAMS.items():
        if only and key not in only.split(","):
            continue
        name, _, arrays, cinn, _ = make()
        b, outs, feed = built(arrays, cinn)
        fn = b.compile(outs, device="cpu", threads=1, exact_float=exact_float, dot_block=dot_block)
        kept = fn(**feed)  # fills every kernel's argument table; the fresh outputs stay alive while timed
        calls = fn._run.calls
        alone = [_interleaved({"k": call}, repeat, cooldown=0.0)["k"] for call in calls]
        in_order: list[list[float]] = [[] for _ in calls]
        whole = []
        for _ in range(5 * repeat):
            t = time.perf_counter()
            kept = fn(**feed)  # the tables now point at these outputs, kept alive while the kernels write them
            whole.append(time.perf_counter() - t)
            for call, times in zip(calls, in_order):
                t = time.perf_counter()
                call()
                times.append(time.perf_counter() - t)
        after = [statistics.median(times) for times in in_order]
        call_time = statistics.median(whole)
        print(f"\n{name}: {len(calls)} kernels, {sum(alone) * 1e3:.3f} ms alone, {sum(after) * 1e3:.3f} ms in order, "
              f"a call {call_time * 1e3:.3f} ms (1 thread)")
        print(f"  {'alone':>9} {'in order':>11}")
        for kernel, t, u in sorted(zip((c.kernel.name for c in calls), alone, after), key=lambda ktu: -ktu[2]):
            print(f"  {t * 1e6:6.1f} us {u * 1e6:8.1f} us {100 * u / sum(after):5.1f}%  {kernel}")
        del kept
    return 0


def emulate_avx2() -> None:
    """Run as an AVX2-only host would, on an AVX-512 one (call before anything compiles or imports torch): cvmc's
    JIT compiles for the host without its AVX-512 features, and the micro-kernels block for 32-byte vectors;
    PyTorch's kernels, oneDNN and MKL are held to AVX2 by their environment variables. ONNX Runtime has no such
    switch: its column keeps AVX-512. The same core, so a ranking, not a Zen 3's or a Haswell's times."""
    import tempfile

    from cvmc.runtime.driver import target
    from cvmc.runtime.engine import jit, llvm_compile

    # inductor's cache keys leave the capability out: a cache of its own, or it loads the AVX-512 kernels of a run
    # before (the chain ran in 0.22 ms, its AVX2 kernel in 0.40)
    cache = os.path.join(tempfile.gettempdir(), f"cvmc-bench-avx2-inductor-{os.getuid()}")
    os.environ.update(ATEN_CPU_CAPABILITY="avx2", ONEDNN_MAX_CPU_ISA="AVX2", MKL_ENABLE_INSTRUCTIONS="AVX2",
                      TORCHINDUCTOR_CACHE_DIR=cache)
    host = llvm_compile.host_target

    def without_avx512() -> tuple[str, str, str]:
        triple, cpu, features = host()
        return triple, cpu, ",".join("-" + f[1:] if f.startswith("+avx512") else f for f in features.split(","))

    llvm_compile.host_target = jit.host_target = without_avx512
    target.host_vector_bytes = lambda: 32


def _optional(name: str, why: str):
    try:
        return __import__(name)
    except ImportError:
        print(f"{name} is not installed ({why}): its column is left empty")
        return None


def main(repeat: int = 10, exact_float: bool = False, cvmc_only: bool = False, only: str = "",
         cooldown: float = 0.1, dot_block: tuple[int, int, int] | None = None) -> int:
    torch = ort = None
    if not cvmc_only:
        torch = _optional("torch", "pip install -e '.[bench]'")
        ort = _optional("onnxruntime", "pip install -e '.[bench]'") if torch is not None else None
    rows, ok = [], True
    for key, make in PROGRAMS.items():
        if only and key not in only.split(","):
            continue
        name, flops, arrays, cinn, math = make()
        want = math(_Numpy, *arrays)
        row = {"name": name, "flops": flops}
        b, outs, feed = built(arrays, cinn)
        for threads in (1, 2):
            fn = b.compile(outs, device="cpu", threads=threads, exact_float=exact_float, dot_block=dot_block)
            ok &= _close(fn(**feed), want)
            systems: dict[str, object] = {f"cvmc{threads}": lambda fn=fn: fn(**feed)}
            if torch is not None:
                torch.set_num_threads(threads)
                t_shim, targs = _torch_shim(torch), [torch.from_numpy(a) for a in arrays]
                with torch.no_grad():
                    systems[f"eager{threads}"] = (lambda t=threads: torch.set_num_threads(t),
                                                  lambda: math(t_shim, *targs))
                    try:
                        torch._dynamo.reset()  # a fresh compile per program and thread count (no recompile limit)
                        compiled = torch.compile(lambda *a: math(t_shim, *a))
                        compiled(*targs)
                        systems[f"compile{threads}"] = (lambda t=threads: torch.set_num_threads(t),
                                                        lambda: compiled(*targs))
                    except Exception as e:  # no C++ compiler, an unsupported op...
                        row["compile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
                    if ort is not None:
                        run = _onnx_session(torch, ort, math, arrays, threads)
                        systems[f"ort{threads}"] = run
                        if not _close(run(), want):
                            row["ort_error"] = "ONNX Runtime's results differ from numpy's"
                    row.update(_interleaved(systems, repeat, cooldown=cooldown))
            else:
                row.update(_interleaved(systems, repeat, cooldown=cooldown))
        if not cvmc_only:  # on its own, last: its threads spin on every core a while after a call
            row.update(_interleaved({"numpy": lambda: math(_Numpy, *arrays)}, repeat, cooldown=cooldown))
        rows.append(row)

    def ms(t):
        return f"{t * 1e3:8.2f}ms" if t else f"{'-':>10}"

    def ratio(a, b):
        return f"{a / b:6.2f}x" if a and b else f"{'-':>7}"

    print(f"\n{'cinn program':36} {'T':>2} {'cvmc':>10} {'GFLOP/s':>8} {'eager':>10} {'compile':>10} {'ORT':>10} "
          f"{'numpy':>10} {'compile/cvmc':>12} {'ORT/cvmc':>8}")
    for r in rows:
        for t in (1, 2):
            c = r[f"cvmc{t}"]
            print(f"{r['name']:36} {t:>2} {ms(c)} {r['flops'] / c / 1e9:8.2f} {ms(r.get(f'eager{t}'))} "
                  f"{ms(r.get(f'compile{t}'))} {ms(r.get(f'ort{t}'))} {ms(r.get('numpy'))} "
                  f"{ratio(r.get(f'compile{t}'), c):>12} {ratio(r.get(f'ort{t}'), c):>8}")
        for key in ("compile_error", "ort_error"):
            if key in r:
                print(f"  {key}: {r[key]}")
    print("ratios > 1: cvmc is faster; numpy runs with its own threading in both rows;",
          "results " + ("match numpy within 1e-3" if ok else "DIFFER from numpy"))
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10, help="rounds of 5 calls per system")
    ap.add_argument("--exact-float", action="store_true", help="float reductions and exp in the sequential order")
    ap.add_argument("--cvmc-only", action="store_true", help="time cvmc alone (no PyTorch, ONNX Runtime, numpy)")
    ap.add_argument("--only", default="", help=f"programs to run, comma-separated, of {','.join(PROGRAMS)}")
    ap.add_argument("--kernels", action="store_true", help="each program's kernels timed alone at 1 thread")
    ap.add_argument("--avx2", action="store_true", help="run as on an AVX2-only host (see emulate_avx2)")
    ap.add_argument("--cooldown", type=float, default=0.1, help="idle seconds before each block of 5 calls")
    ap.add_argument("--dot-block", default="", help="MR,NR,KC of the float Dot kernels (default: cinn_dot.BLOCK)")
    args = ap.parse_args()
    block = tuple(int(v) for v in args.dot_block.split(",")) if args.dot_block else None
    if args.avx2:
        emulate_avx2()
    if args.kernels:
        raise SystemExit(kernels(args.repeat, args.exact_float, args.only, block))  # pyright: ignore[reportArgumentType]
    raise SystemExit(main(args.repeat, args.exact_float, args.cvmc_only, args.only, args.cooldown, block))  # pyright: ignore[reportArgumentType]
