"""The runner of CinnBuilder's cpu device (`cinn_builder.CinnRunner`): the same bits at every thread count, with
and without the native program; two Python threads calling one compiled function; inputs never written, outputs
never shared between calls."""

import threading

import numpy as np
import pytest

from cvmc import CinnBuilder

pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")

RNG = np.random.default_rng(31)
THREADS = [1, 2, 3, 7]


def program(b, x, w, y):
    """Kernels of several trips (rows, a dot's rows, a transpose, a reduction), a constant (a kernel of no
    input), an intermediate both returned and read by later kernels, and an input returned as it is."""
    zero = b.const_scalar(0.0, "zero")
    r = b.max(x, zero)
    e = b.exp(b.sub(x, b.reduce(r, "max", [-1], True)))
    s = b.div(e, b.reduce(e, "sum", [-1], True))
    h = b.dot(s, w)
    t = b.add(b.transpose(h, [1, 0]), y)
    return [t, s, x, zero, b.tanh(h)]


def inputs(m: int, n: int = 29, k: int = 13) -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((m, n)).astype(np.float32), "w": RNG.standard_normal((n, k)).astype(np.float32),
            "y": RNG.standard_normal((k, m)).astype(np.float32)}  # fmt: skip


@pytest.fixture
def share_all(monkeypatch):
    """Every kernel of more than one unit shared by the threads, however small the program."""
    from cvmc.runtime.devices import cpu

    monkeypatch.setattr(cpu, "NATIVE_SPLIT_WORK", 0)
    monkeypatch.setattr(cpu, "SPLIT_WORK", 0)


def compiled(m: int, threads: int, fuse: bool = True, device: str = "cpu"):
    b = CinnBuilder("net")
    x = b.create_input("float32", [m, 29], "x")
    w = b.create_input("float32", [29, 13], "w")
    y = b.create_input("float32", [13, m], "y")
    return b.compile(program(b, x, w, y), device=device, fuse=fuse, threads=threads)


def assert_bits(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("m", [1, 3, 37])  # fewer rows than threads, and rows that split unevenly
def test_the_same_bits_at_every_thread_count(m, fuse, share_all):
    args = inputs(m)
    want = compiled(m, 1, fuse)(**args)
    reference = compiled(m, 1, device="reference")(**args)
    for g, r in zip(want, reference):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6)
    for threads in THREADS:
        fn = compiled(m, threads, fuse)
        assert fn._run.threads == threads and sum(fn._run.splits) > 1
        assert_bits(fn(**args), want)
        assert_bits(fn(**args), want)  # and on a second call, through the same buffers


def test_the_same_bits_without_the_native_program(monkeypatch, share_all):
    """Where `Program` cannot run (not Linux on x86-64), the kernels run one by one: the same bits."""
    import cvmc.runtime.engine.jit as jit

    args = inputs(37)
    want = compiled(37, 1)(**args)
    monkeypatch.setattr(jit, "program_runner_available", lambda: False)
    for threads in (1, 3):
        fn = compiled(37, threads)
        assert fn._run.native is None
        assert_bits(fn(**args), want)


@pytest.mark.parametrize("threads", [1, 2])
def test_two_python_threads_call_one_function(threads, share_all):
    """Each Python thread calls the same compiled function on its own inputs, started together: every call
    gives that thread's results (the calls share the intermediate buffers and the argument tables)."""
    cases = [inputs(37) for _ in range(2)]
    want = [compiled(37, 1)(**args) for args in cases]
    fn = compiled(37, threads)
    start = threading.Barrier(2)
    wrong: list[int] = []

    def work(i: int) -> None:
        start.wait()
        for _ in range(25):
            got = fn(**cases[i])
            if any(g.tobytes() != w.tobytes() for g, w in zip(got, want[i])):
                wrong.append(i)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert wrong == []


@pytest.mark.parametrize("threads", [1, 2])
def test_inputs_are_not_written_and_outputs_are_not_shared(threads, share_all):
    fn = compiled(37, threads)
    first_args, second_args = inputs(37), inputs(37)
    kept = {k: v.copy() for k, v in first_args.items()}
    for a in first_args.values():
        a.flags.writeable = False  # read in place: a read-only array is taken as it is
    first = fn(**first_args)
    assert_bits(list(first_args.values()), list(kept.values()))
    saved = [a.copy() for a in first]
    second = fn(**second_args)
    assert_bits(first, saved)  # the next call wrote none of the first call's outputs
    for a in first:
        assert a.flags.writeable and a.flags.owndata
        assert not any(np.shares_memory(a, b) for b in [*second, *first_args.values(), *second_args.values()])
    assert not np.shares_memory(first[0], first[1])
    # an output changed by the caller changes nothing the next call computes (the constant and the input included)
    for a in first:
        a[...] = 7
    assert_bits(fn(**first_args), saved)


def test_intermediates_share_buffers_only_when_their_lives_do_not_overlap():
    """One kernel per primitive: a chain whose first values stay live to the end (read by the last kernels) while
    the middle ones die early. Integer math, so the result is exact: a buffer shared by two live values would
    show; and the buffers are fewer than the intermediates."""
    x = RNG.integers(-1000, 1000, (9, 11)).astype(np.int32)
    runs = []
    for device in ("reference", "cpu"):
        b = CinnBuilder("net")
        v = b.create_input("int32", [9, 11], "x")
        keep = b.mul(v, v)  # live to the end
        y = keep
        for _ in range(6):
            y = b.sub(b.add(y, v), b.const_scalar(3, "three"))
        z = b.add(b.transpose(b.add(y, keep), [1, 0]), b.transpose(keep, [1, 0]))
        fn = b.compile([z, b.reduce(keep, "sum", [1])], device=device, fuse=False, threads=2)
        runs.append(fn(x=x))
    assert_bits(runs[1], runs[0])
    buffers = [a for a in fn._run.buffers.values() if a.ndim]  # the intermediates (the constant is rank 0)
    distinct = [a for i, a in enumerate(buffers) if not any(np.shares_memory(a, c) for c in buffers[:i])]
    assert len(distinct) < len(buffers)


def test_a_kernel_is_shared_from_native_split_work_and_a_program_from_split_work():
    """A program shares its kernels with the threads where the shared ones hold SPLIT_WORK in all (else it runs
    on the calling thread alone); a kernel is shared from NATIVE_SPLIT_WORK element operations (a dot's are its
    multiply-adds). At each bound and one below it."""
    from cvmc.runtime.devices.cpu import NATIVE_SPLIT_WORK, SPLIT_WORK

    def runner(size: int, rows: int, depth: int = 1, cols: int = 1):
        b = CinnBuilder("net")
        x = b.create_input("float32", [size], "x")
        u = b.create_input("float32", [rows, depth], "u")
        v = b.create_input("float32", [depth, cols], "v")
        return b.compile([b.exp(x), b.dot(u, v)], device="cpu", threads=2)._run

    assert (runner(SPLIT_WORK, 16).threads, runner(SPLIT_WORK - 1, 16).threads) == (2, 1)
    # 2 x 64 results of 64 multiply-adds each: NATIVE_SPLIT_WORK, though no array holds more than 4096 elements;
    # 64 columns: at least two column panels of the float Dot's micro-kernel (its units), on AVX2 and AVX-512
    assert NATIVE_SPLIT_WORK == 2 * 64 * 64
    assert runner(SPLIT_WORK, 2, depth=64, cols=64).splits == [True, True]
    assert runner(SPLIT_WORK, 2, depth=63, cols=64).splits == [True, False]  # 2 x 64 x 63 < NATIVE_SPLIT_WORK
    assert runner(SPLIT_WORK, NATIVE_SPLIT_WORK, cols=1).splits == [True, False]  # one column panel: one unit


def test_the_work_of_a_conv_is_its_multiply_adds_in_each_form():
    from cvmc.runtime.cinn_builder import _op_work

    n, c, o, hw = 2, 3, 5, 6
    macs = n * o * hw * hw * c * 3 * 3
    b = CinnBuilder("net")
    x = b.create_input("float32", [n, c, hw, hw], "x")
    w = b.create_input("float32", [o, c, 3, 3], "w")
    dy = b.create_input("float32", [n, o, hw, hw], "dy")
    y = b.conv(x, w, paddings=(1, 1))
    dx = b.conv(w, dy, paddings=(1, 1), conv_type="backward_data", output_shape=[n, c, hw, hw])
    dw = b.conv(x, dy, paddings=(1, 1), conv_type="backward_filter", output_shape=[o, c, 3, 3])
    assert [_op_work(v.owner) for v in (y, dx, dw)] == [macs] * 3
    assert _op_work(b.exp(x).owner) == n * c * hw * hw
    assert _op_work(b.reduce(x, "sum", [1, 2, 3]).owner) == n * c * hw * hw  # what it reads
