"""A blocked conv2d whose output only the next conv2d reads writes that conv's padded NHWC input in its epilogue
(its outlined kernel ends in the `cvm_sched.pack`, `loops.x86.conv2d_packing`): no pack kernel runs between them
and the int32 output is not stored. The rule's bound is the pack being the output's one reader: with a second
reader (an elementwise op, a head) the output is stored and a pack kernel runs. Bit-exact with the reference on
every edge: paddings (none, symmetric, one side wider), a partial block of output channels, pixels past the last
block of rows, a batch, strides, a fused residual add in the producer, int16 and u8 x s8 data, 1 and 2 threads."""

import numpy as np
import pytest
from scheduled import Kernel, bufferized, element, op_name

from cvmc import CvmBuilder
from cvmc.passes.loops.target import GPU, Target
from cvmc.runtime.devices.cpu import compile_graph, lower_graph
from cvmc.runtime.driver.target import detect_target
from cvmc.runtime.references.cvm import run_graph

RNG = np.random.default_rng(31)


# The kernels follow the host's tier (`detect_target`): every test here runs on the `host` fixture's host
# (`make test-hosts`: each simulated one).
pytestmark = pytest.mark.hosts


@pytest.fixture(autouse=True)
def _host_kernels(monkeypatch, host):
    monkeypatch.setenv("CVMC_VNNI", "0")
    monkeypatch.delenv("CVMC_MMK", raising=False)
    monkeypatch.delenv("CVMC_AVX2", raising=False)


def _rand(shape, bound=127):
    return RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)


def _two_convs(x_shape=(1, 8, 7, 9), mid=20, out=16, padding=(1, 1), strides=(1, 1), relu=True, residual=False,
               reader=None, head=False):
    """conv -> requantize (-> relu) -> conv with `padding`, `strides`; `reader`: a second reader of the first
    conv's output ("relu": a relu of it, a head); `head`: the first conv's output is a head too."""
    b = CvmBuilder()
    x = b.create_input(list(x_shape), 8)
    data = b.relu(x) if relu else x
    w1 = b.create_param(_rand((mid, x_shape[1], 3, 3)), 8)
    y = b.conv2d(data, w1, b.create_param(_rand((mid,)), 8), channels=mid, kernel_size=(3, 3), padding=(1, 1),
                 use_bias=True)
    y = b.cvm_right_shift(y, precision=8, shift_bit=8)
    if residual:  # the producer's epilogue reads another tensor (x has mid channels here)
        y = b.cvm_right_shift(b.elemwise_add(y, x), precision=8, shift_bit=1)
    if relu:
        y = b.relu(y)
    w2 = b.create_param(_rand((out, mid, 3, 3)), 8)
    z = b.conv2d(y, w2, channels=out, kernel_size=(3, 3), padding=padding, strides=strides, use_bias=False)
    z = b.cvm_right_shift(z, precision=8, shift_bit=8)
    heads = [z]
    if reader == "relu":
        heads.append(b.relu(y))
    if head:
        heads.append(y)
    return b.graph(heads)


def _kernels(graph, target=None) -> list[Kernel]:
    """The calls of the bufferized module for `target`, else as the runtime lowers it here (`detect_target`)."""
    return bufferized(graph, target).kernels


def _check(graph, threads=1):
    x = _rand(graph.nodes[graph.input_id].shapes[0])
    want = run_graph(graph, x)
    run = compile_graph(graph, threads=threads, cache=False)
    run.arena[:] = 0xA5  # what an earlier buffer may have left where the padding goes: the epilogue writes it
    got = run(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _packs(kernels: list[Kernel]):
    """Per call: its ops (a pack kernel: ["pack"]), the packs its epilogue writes, whether it stores its output."""
    out = []
    for k in kernels:
        if k.ops == ["pack"]:
            out.append((["pack"], 0, True))
        else:
            out.append(([o for o in k.ops if o != "pack"], k.stored.count("pack"), any(s != "pack" for s in k.stored)))
    return out


@pytest.mark.parametrize("relu", [True, False])  # u8 x s8 data, int16 data
def test_the_one_reader_bound_and_one_past(relu):
    one = _packs(_kernels(_two_convs(relu=relu)))
    first = ["conv2d", "cvm_right_shift", "relu"] if relu else ["conv2d", "cvm_right_shift"]
    assert one[-3:] == [(["pack"], 0, True), (first, 1, False), (["conv2d", "cvm_right_shift"], 0, True)]
    two = _packs(_kernels(_two_convs(relu=relu, reader="relu")))  # a second reader: stored, then a pack kernel
    assert [g for g in two if g[0] == ["pack"]] and (first, 0, True) in two
    head = _packs(_kernels(_two_convs(relu=relu, head=True)))  # a head: stored, then a pack kernel
    assert [g for g in head if g[0] == ["pack"]] and (first, 0, True) in head


def _int32_views(graph, elements):
    """The views of the arena of `elements` int32 values that the host passes or returns."""
    return [v for v in bufferized(graph).arena_views() if v.element == "i32" and np.prod(v.shape) == elements]


def test_the_dropped_output_takes_no_arena_space():
    """The first conv's int32 output (20 x 7 x 9) has no buffer: no call writes or reads it, the arena holds none;
    stored when it is a head (then also returned)."""
    assert _int32_views(_two_convs(), 20 * 7 * 9) == []
    assert _int32_views(_two_convs(head=True), 20 * 7 * 9)


def _epilogue_packs(kernels: list[Kernel]) -> int:
    return sum(n for _, n, _ in _packs(kernels))


def test_no_epilogue_pack_without_the_blocked_kernel_nor_on_the_gpu():
    assert _epilogue_packs(_kernels(_two_convs(), GPU)) == 0
    assert _epilogue_packs(_kernels(_two_convs(), Target("avx2", mmk=False))) == 0
    assert _epilogue_packs(_kernels(_two_convs(), Target("avx2"))) == 1


def test_the_producer_keeps_its_accumulators_pixel_major():
    ir = lower_graph(_two_convs())[1]
    target = detect_target()
    kernels = "__cvmc_mmk_u8s8_r4_l16_pm" if target.has("avx2") else "__cvmc_mmk_i16_r4_l16_pm"
    assert f'define internal void @"{kernels}"(' in ir


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("x_shape", "mid", "padding", "strides", "relu", "residual"), [
    ((1, 8, 7, 9), 20, (1, 1), (1, 1), True, False),  # a partial block of 4 channels; 9 = 2 x 4 rows + 1
    ((2, 8, 6, 5), 16, (0, 0), (1, 1), True, False),  # a batch, no padding to write
    ((1, 8, 5, 6), 32, (2, 1), (1, 1), False, False),  # int16 data, padding wider on the rows
    ((1, 8, 8, 8), 16, (0, 2), (2, 2), True, False),  # padding on the columns only, a strided reader
    ((1, 16, 6, 7), 16, (1, 1), (1, 1), True, True),  # the producer's epilogue reads a residual
])
def test_bit_exact_with_the_reference(x_shape, mid, padding, strides, relu, residual, threads):
    _check(_two_convs(x_shape, mid, 24, padding, strides, relu, residual), threads)


def test_bit_exact_past_the_bound():
    _check(_two_convs(reader="relu"))
    _check(_two_convs(head=True))


def _block(x_shape=(1, 16, 6, 7), relu=True, late_pack=False, kernel=(3, 3)):
    """A residual block: a = conv(x); b = conv(a) (`kernel`, padded to keep the size); c = requantize(b + a)
    (-> relu); head = conv(c). With `late_pack`, the add's group runs before the conv that reads a (its pack comes
    after the add reads a)."""
    b = CvmBuilder()
    x = b.create_input(list(x_shape), 8)
    c = x_shape[1]

    def conv(v, name, k=(3, 3)):
        w = b.create_param(_rand((c, c, *k)), 8, name=name)
        y = b.cvm_right_shift(b.conv2d(v, w, channels=c, kernel_size=k, padding=(k[0] // 2, k[1] // 2),
                                       use_bias=False), precision=8, shift_bit=8)
        return b.relu(y) if relu else y

    a = conv(b.relu(x) if relu else x, "w0")
    y = conv(x if late_pack else a, "w1", kernel)
    y = b.cvm_right_shift(b.elemwise_add(y, a), precision=8, shift_bit=1)
    y = b.relu(y) if relu else y
    if late_pack:
        y = b.cvm_right_shift(b.elemwise_add(y, conv(a, "w3")), precision=8, shift_bit=1)
    return b.graph([conv(y, "w2")])


def _add_extras(kernels: list[Kernel]):
    """The first kernel with an elemwise_add in its epilogue: for each operand of the add that it reads from an
    argument (not computed by its own ops), what the last call before it wrote to those bytes: the element type
    of the value it stored there, and whether that value was a packed copy (a pack in its epilogue)."""
    at, add = next((i, k) for i, k in enumerate(kernels) if "elemwise_add" in k.ops[1:])
    op = next(o for o in add.body if op_name(o) == "elemwise_add")
    out = []
    for v in op.operands:
        source = add.source(v)
        if source is not None:
            view = source[0]
            stored = next((element(t), s == "pack") for k in reversed(kernels[:at])
                          for w, s, t in zip(k.written, k.stored, k.stored_types)
                          if (w.root, w.shift) == (view.root, view.shift))
            assert view.element[1:] == stored[0][1:]  # read as it was written: bytes, int16 or int32
            out.append(stored)
    return out


@pytest.mark.parametrize("relu", [True, False])  # u8 x s8, int16
def test_a_shortcut_is_read_from_the_next_convs_packed_input(relu):
    """The add reads a from the pack written before it: a is not stored, and no pack kernel runs for it."""
    kernels = _kernels(_block(relu=relu))
    kinds = _packs(kernels)
    assert sum(1 for k in kinds if k[0] == ["pack"]) == 1  # the input's alone
    u8 = relu and detect_target().has("avx2")  # u8 x s8 on AVX2 and up; int16 on a generic host
    assert _add_extras(kernels) == [("u8" if u8 else "i16", True)]  # a strided view of the packed copy
    convs = [k for k in kinds if k[0][0] == "conv2d"]
    assert [(n, stored) for _, n, stored in convs] == [(1, False), (1, False), (0, True)]


def test_a_shortcut_read_before_its_pack_is_written_stays_int32():
    assert _add_extras(_kernels(_block(late_pack=True))) == [("i32", False)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("x_shape", "relu", "late_pack", "kernel"), [
    ((1, 16, 6, 7), True, False, (3, 3)), ((2, 16, 5, 9), False, False, (3, 3)), ((1, 32, 7, 6), True, True, (3, 3)),
    ((1, 16, 7, 6), True, False, (5, 3)), ((1, 16, 6, 7), False, False, (1, 5)),  # paddings (2, 1), (0, 2)
])
def test_shortcuts_bit_exact_with_the_reference(x_shape, relu, late_pack, kernel, threads):
    _check(_block(x_shape, relu, late_pack, kernel), threads)
