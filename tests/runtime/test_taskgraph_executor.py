"""Task Rabbit: LeNet's logits, every prims graph against a second, loop-level reading of the spec,
every rearrange, CLIF state across steps, and its errors."""

import numpy as np
import pytest
from conftest import DATA
from xdsl.dialects.builtin import ModuleOp

from cvmc.dialects.taskgraph import (
    ClifOp,
    ClusterAttr,
    EdgeOp,
    GraphOp,
    InterfaceAttr,
    OutputOp,
    ParamAttr,
    ParamKind,
    Precision,
    RearrangeAttr,
    RearrangeKind,
    ShapeAttr,
    SiOp,
    TensorAttr,
)
from cvmc.errors import CVMLogicError
from cvmc.runtime.frontend import taskir_pb2 as pb
from cvmc.runtime.frontend.taskir_files import find_graph, import_task, load_message
from cvmc.runtime.references.taskgraph import TaskGraphExecutor, apply_rearrange, input_frames

TASKIR = DATA / "taskir"
PRIMS = sorted((TASKIR / "prims").glob("*.task.txt"))
R = RearrangeKind


def lenet_input() -> np.ndarray:
    return np.fromfile(TASKIR / "lenet" / "i_0_0_0.dat", dtype="<i4")


def test_lenet_gives_its_expected_logits():
    graph = find_graph(import_task(TASKIR / "lenet" / "lenet.task.txt"))
    expected = np.loadtxt(TASKIR / "lenet" / "o_0_0_0.dat.txt", dtype=np.int64)
    (outs,) = TaskGraphExecutor(graph).run(1, input_frames(graph, lenet_input()))
    assert list(outs) == [36]
    assert outs[36].tolist() == expected.tolist()
    # The text copy of the input is the same data.
    text = np.loadtxt(TASKIR / "lenet" / "i_0_0_0.dat.txt", dtype=np.int64)
    assert text.tolist() == lenet_input().tolist()


# --- a second reading of the spec, on the protobuf message, one output position at a time -------------------


def _wrap(v):
    return ((np.asarray(v, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def _attr(block, name, default=0):
    for a in block.attributes:
        if pb.AttributeType.Name(a.type) == name:
            return a.int_value
    return default


def _padded_get(x, y, xx, pu, pl):
    """x[y - pu, xx - pl] of the input seen through its zero padding."""
    iy, ix = y - pu, xx - pl
    if 0 <= iy < x.shape[0] and 0 <= ix < x.shape[1]:
        return x[iy, ix]
    return np.zeros(x.shape[2:], dtype=np.int64)


def _window_reduce(block, x, combine):
    s = block.shape
    pu, pl = _attr(block, "PAD_UP"), _attr(block, "PAD_LEFT")
    sy, sx = _attr(block, "STRIDE_Y", 1), _attr(block, "STRIDE_X", 1)
    if not s.ny:
        return x
    out = np.zeros((s.ny, s.nx, s.nf), dtype=np.int64)
    for oy in range(s.ny):
        for ox in range(s.nx):
            acc = None
            for a in range(s.nky):
                for b in range(s.nkx):
                    v = _padded_get(x, oy * sy + a, ox * sx + b, pu, pl)
                    acc = v.copy() if acc is None else combine(acc, v)
            out[oy, ox] = acc
    return out


def reference_block(block, ins):
    """The output of one compute block from its input values, following shared/spec/task-ir.md."""
    kind = pb.TaskBlockType.Name(block.type)
    s = block.shape
    vector_bias = block.HasField("bias_type") and block.bias_type == pb.VECTOR
    bias = ins[-1] if vector_bias else _attr(block, "CONSTANT_B")
    if kind == "CADD":
        return _wrap(sum(ins[:-1] if vector_bias else ins) + bias)
    if kind == "CVVH":
        return _wrap(ins[0] * ins[1] + bias)
    if kind == "CAX":
        return _wrap(ins[0] * ins[1] + bias)
    if kind == "CVS":
        return _wrap(ins[0] * _attr(block, "CONSTANT_A") + bias)
    if kind == "CVM":
        w, x = ins[1], ins[0]
        return _wrap([sum(int(w[f, r]) * int(x[r]) for r in range(s.nr)) for f in range(s.nf)] + bias)
    if kind in ("CC", "CC2D"):
        x, w = ins[0], ins[1]
        pu, pl = _attr(block, "PAD_UP"), _attr(block, "PAD_LEFT")
        sy, sx = _attr(block, "STRIDE_Y", 1), _attr(block, "STRIDE_X", 1)
        dy, dx = _attr(block, "DILATION_Y", 1), _attr(block, "DILATION_X", 1)
        out = np.zeros((s.ny, s.nx, s.nf), dtype=np.int64)
        for oy in range(s.ny):
            for ox in range(s.nx):
                for a in range(s.nky):
                    for b in range(s.nkx):
                        v = _padded_get(x, oy * sy + a * dy, ox * sx + b * dx, pu, pl)  # [r]
                        out[oy, ox] += w[:, :, a, b] @ v
        return _wrap(out + bias)
    if kind == "CAVG":
        return _wrap(_window_reduce(block, ins[0], lambda acc, v: acc + v) + bias)
    if kind == "CCMPB":
        m = _window_reduce(block, ins[0], np.maximum)
        hi = {pb.INT_8: 127, pb.INT_32: 2**31 - 1, pb.TERNARY: 1}[block.precision]
        return np.clip(m >> _attr(block, "BIT_SHIGT_NUM"), _attr(block, "CMP"), hi)
    if kind == "CLUT":
        dw = _attr(block, "LUT_DW")
        lut = ins[1]
        out = np.zeros_like(ins[0])
        for idx, v in np.ndenumerate(ins[0]):
            v = min(max(int(v), -(2 ** (dw - 1))), 2 ** (dw - 1) - 1)
            out[idx] = lut[v if v >= 0 else v + 2**dw]
        return out
    raise NotImplementedError(kind)


def reference_run(message) -> dict[int, np.ndarray]:
    """Run a graph whose edges copy whole clusters (RESHAPE only), block by block."""
    blocks = {b.id: b for b in message.blocks}
    into: dict[int, list] = {i: [] for i in blocks}
    for e in message.edges:
        into[e.dst_block_id].append(e)
    cluster_of = {}
    for b in message.blocks:
        for k, c in enumerate(b.input_clusters):
            for i in c.interfaces:
                cluster_of[i.edge_id] = k

    def extents(b):
        s = b.shape
        dims = [("ny", s.ny), ("nx", s.nx), ("nf", s.nf), ("nr", s.nr), ("nky", s.nky), ("nkx", s.nkx)]
        return tuple(v for _, v in dims if v)

    values: dict[int, np.ndarray] = {}

    def value(i):
        if i in values:
            return values[i]
        b = blocks[i]
        ins = sorted(into[i], key=lambda e: cluster_of[e.id])
        if pb.TaskBlockType.Name(b.type).startswith("C"):
            args = []
            for e in ins:
                args.append(value(e.src_block_id))
            kind = pb.TaskBlockType.Name(b.type)
            if kind in ("CC", "CC2D"):  # the SIC input is (iy, ix, r)
                args[0] = args[0].reshape(b.shape.niy, b.shape.nix, b.shape.nr)
            if kind in ("CAVG", "CCMPB") and b.shape.niy:
                args[0] = args[0].reshape(b.shape.niy, b.shape.nix, b.shape.nf)
            values[i] = reference_block(b, args)
        elif ins:
            (e,) = ins
            v = value(e.src_block_id)
            if e.rearrange_info:
                (info,) = e.rearrange_info
                assert info.type == pb.RESHAPE and list(info.matrix[0].int32_data) in ([0, 1, 2], [2, 1, 0])
            values[i] = v.reshape(-1).reshape(extents(b))
        else:
            values[i] = np.array(b.data.int32_data, dtype=np.int64).reshape(extents(b))
        return values[i]

    return {b.id: value(b.id).reshape(-1) for b in message.blocks if b.type == pb.OUTPUT}


@pytest.mark.parametrize("path", PRIMS, ids=lambda p: p.name.removesuffix(".task.txt"))
def test_prims_graph_matches_the_loop_reference(path):
    expected = reference_run(load_message(path))
    outs = TaskGraphExecutor(find_graph(import_task(path))).step()
    assert outs.keys() == expected.keys()
    for k in outs:
        assert outs[k].dtype == np.int32
        assert outs[k].tolist() == expected[k].tolist()


def test_the_reference_agrees_on_lenet_too():
    message = load_message(TASKIR / "lenet" / "lenet.task.txt")
    message.blocks[-2].data.int32_data.extend(lenet_input().tolist())  # INPUT's data, for the reference
    expected = np.loadtxt(TASKIR / "lenet" / "o_0_0_0.dat.txt", dtype=np.int64)
    assert reference_run(message)[36].tolist() == expected.tolist()


# --- rearranges ------------------------------------------------------------------------------------------------

A = np.array([[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize(
    ("kind", "matrices", "expected"),
    [
        (R.IDENTITY, [], A),
        (R.RESHAPE, [], [1, 2, 3, 4, 5, 6]),
        (R.RESHAPE, [[1, 0]], [1, 2, 3, 4, 5, 6]),  # axis 1 fastest: row-major
        (R.RESHAPE, [[0, 1]], [1, 4, 2, 5, 3, 6]),  # axis 0 fastest: column-major
        (R.PERMUTE, [], [[1, 4], [2, 5], [3, 6]]),
        (R.PERMUTE, [[1, 0]], [[1, 4], [2, 5], [3, 6]]),
        (R.ROTATE, [[1]], [[3, 6], [2, 5], [1, 4]]),
        (R.ROTATE, [[2]], [[6, 5, 4], [3, 2, 1]]),
        (R.ROTATE, [[-1]], [[4, 1], [5, 2], [6, 3]]),
        (R.SHIFT, [[0, 1]], [[3, 1, 2], [6, 4, 5]]),  # cyclic, right
        (R.SHIFT, [[1, 1], [0]], [[6, 4, 5], [3, 1, 2]]),  # cyclic, down and right
        (R.SHIFT, [[0, -1], [1]], [[2, 3, 0], [5, 6, 0]]),  # zero fill, left
        (R.SHIFT, [[1, -1], [1]], [[0, 0, 0], [2, 3, 0]]),
        (R.SCALE, [[2, 1]], [[1, 2, 3], [1, 2, 3], [4, 5, 6], [4, 5, 6]]),
        (R.SCALE, [[1, 2]], [[1, 1, 2, 2, 3, 3], [4, 4, 5, 5, 6, 6]]),
        (R.SHEAR, [[0, 1]], [[1, 2, 3, 0], [0, 4, 5, 6]]),  # out[i, j + i]
        (R.SHEAR, [[1, 0]], [[1, 0, 0], [4, 2, 0], [0, 5, 3], [0, 0, 6]]),  # out[i + j, j]
        (R.SHEAR, [[0, 1], [1]], [[1, 2, 3], [6, 4, 5]]),  # cyclic
        (R.REFLECT, [], [[3, 2, 1], [6, 5, 4]]),
        (R.REFLECT, [[0]], [[4, 5, 6], [1, 2, 3]]),
        (R.REFLECT, [[0, 1]], [[6, 5, 4], [3, 2, 1]]),
        (R.AFFINE, [[[0, 1, 0], [1, 0, 0]], [3, 2]], [[1, 4], [2, 5], [3, 6]]),  # transpose
        (R.AFFINE, [[[1, 0, 0], [0, 1, 1]]], [[0, 1, 2], [0, 4, 5]]),  # shift right, dropping what leaves
        (R.AFFINE, [[[0, 0, 0], [0, 1, 0]], [1, 3]], [[4, 5, 6]]),  # collisions: the later source wins
        (R.PROJECT, [[[1, 0, 0], [0, 1, 0], [0, 0, 1]]], A),
        (R.PROJECT, [[[1, 0, 0], [0, 1, 0], [0, 0, 2]]], [[5, 6, 0], [0, 0, 0]]),  # out[i // 2, j // 2]
        # w = j - 1: column 0 maps to (-i, 0) (row -1 leaves), column 1 (w = 0) drops, column 2 stays.
        (R.PROJECT, [[[1, 0, 0], [0, 1, 0], [0, 1, -1]]], [[1, 0, 3], [0, 0, 6]]),
        (R.SHUFFLE, [[5, 4, 3, 2, 1, 0]], [[6, 5, 4], [3, 2, 1]]),
        (R.SHUFFLE, [[2, 0, 1], [1]], [[3, 1, 2], [6, 4, 5]]),  # columns
        (R.SHUFFLE, [[1, 0], [0]], [[4, 5, 6], [1, 2, 3]]),  # rows
    ],
)
def test_rearrange(kind, matrices, expected):
    r = RearrangeAttr.get(kind, *matrices)
    out = apply_rearrange(r, A)
    assert out.tolist() == np.asarray(expected).tolist()
    assert tuple(r.result_shape(A.shape)) == out.shape


def test_planar_rearranges_carry_the_trailing_axes():
    a = np.arange(2 * 3 * 2).reshape(2, 3, 2)
    out = apply_rearrange(RearrangeAttr.get(R.ROTATE, [1]), a)
    for f in range(2):
        assert out[:, :, f].tolist() == np.rot90(a[:, :, f]).tolist()
    sheared = apply_rearrange(RearrangeAttr.get(R.SHEAR, [0, 1]), a)
    assert sheared.shape == (2, 4, 2) and sheared[1, 1:, 1].tolist() == a[1, :, 1].tolist()


def _port_graph(rearranges, src_shape, dst_shape, src_iface=None, dst_iface=None, dst_size=None):
    """SI (values 1..n) -> edge with rearranges -> OUTPUT."""
    n = int(np.prod(list(src_shape.values())))
    data = TensorAttr.from_numpy(np.arange(1, n + 1).reshape(list(src_shape.values())), Precision.INT_32)
    out_shape = dst_size or dst_shape
    return GraphOp([
        SiOp(0, Precision.INT_32, ShapeAttr.get(**src_shape), outputs=[ClusterAttr.get([src_iface or 0])], data=data),
        OutputOp(1, Precision.INT_32, ShapeAttr.get(**out_shape), inputs=[ClusterAttr.get([dst_iface or 0])]),
        EdgeOp(0, 0, 1, rearranges),
    ])  # fmt: skip


def test_an_edge_applies_its_rearranges_in_order_between_interface_boxes():
    # Read the box f in [1, 2) of a 2x3x2 block, rotate it, then write it as a 3x2 OUTPUT.
    src = InterfaceAttr.get(0, ShapeAttr.get(f=1), ShapeAttr.get(y=2, x=3, f=1))
    graph = _port_graph([RearrangeAttr.get(R.ROTATE, [1])], {"y": 2, "x": 3, "f": 2}, {"y": 3, "x": 2, "f": 1},
                        src_iface=src)  # fmt: skip
    ModuleOp([graph]).verify()
    values = np.arange(1, 13).reshape(2, 3, 2)[:, :, 1]
    assert TaskGraphExecutor(graph).step()[1].tolist() == np.rot90(values).reshape(-1).tolist()


def test_an_edge_fills_only_its_destination_box():
    dst = InterfaceAttr.get(0, ShapeAttr.get(f=2), ShapeAttr.get(f=3))
    graph = _port_graph([RearrangeAttr.get(R.REFLECT, [0])], {"f": 3}, {"f": 6}, dst_iface=dst)
    ModuleOp([graph]).verify()
    assert TaskGraphExecutor(graph).step()[1].tolist() == [0, 0, 3, 2, 1, 0]


# --- CLIF state ---------------------------------------------------------------------------------------------


def _lif_graph(x, v0, params):
    shape = ShapeAttr.get(f=len(x))
    t = lambda v: TensorAttr.from_numpy(np.array(v), Precision.INT_32)  # noqa: E731
    return GraphOp([
        SiOp(0, Precision.INT_32, shape, outputs=[ClusterAttr.get([0])], data=t(x)),
        SiOp(1, Precision.INT_32, shape, outputs=[ClusterAttr.get([1])], data=t(v0)),
        ClifOp(2, Precision.INT_32, shape, [ClusterAttr.get([0]), ClusterAttr.get([1])], [ClusterAttr.get([2])],
               [ParamAttr.get(k, v) for k, v in params.items()]),
        SiOp(3, Precision.INT_32, shape, [ClusterAttr.get([2])], [ClusterAttr.get([3])]),
        OutputOp(4, Precision.INT_32, shape, [ClusterAttr.get([3])]),
        EdgeOp(0, 0, 2), EdgeOp(1, 1, 2), EdgeOp(2, 2, 3), EdgeOp(3, 3, 4),
    ])  # fmt: skip


def test_clif_integrates_fires_and_keeps_its_membrane_between_steps():
    P = ParamKind
    graph = _lif_graph([4, 11, 0], [0, 0, 5], {P.VTH0: 10, P.VR: 0, P.VLEAKY_BETA: -1})
    ModuleOp([graph]).verify()
    steps = TaskGraphExecutor(graph).run(4)
    spikes = [s[4].tolist() for s in steps]
    # x = 4: V 0 -> 3 -> 6 -> 9, then v = 13 > 10: fire, reset to 0, leak to -1.
    # x = 11: v = 11 fires (V' = -1), then v = 10 does not (V' = 9), then v = 20 fires again.
    # x = 0, V = 5: leaks by 1 per step, never fires.
    assert spikes == [[0, 1, 0], [0, 0, 0], [0, 1, 0], [1, 0, 0]]
    membrane = TaskGraphExecutor(graph)
    membrane.run(2)
    assert membrane.values[1].tolist() == [6, 9, 3]


def test_clif_adaptive_leak_and_saturation():
    P = ParamKind
    params = {P.VTH0: 2**27, P.VLEAKY_ADPT_EN: 1, P.VLEAKY_ALPHA: 128, P.VLEAKY_BETA: 1}
    graph = _lif_graph([2**27, -7, 0], [2**27, 0, 0], params)
    ex = TaskGraphExecutor(graph)
    assert ex.step()[4].tolist() == [0, 0, 0]
    # v = clamp28(2^28) = 2^27 - 1, then floor(128 v / 256) + 1; floor(-7 / 2) + 1 = -3; 0 + 1 = 1.
    assert ex.values[1].tolist() == [(2**27 - 1) // 2 + 1, -3, 1]


# --- errors ---------------------------------------------------------------------------------------------------


def test_inputs_are_checked():
    graph = find_graph(import_task(TASKIR / "lenet" / "lenet.task.txt"))
    ex = TaskGraphExecutor(graph)
    with pytest.raises(CVMLogicError, match="block 35: no values given for INPUT"):
        ex.step()
    with pytest.raises(CVMLogicError, match="block 35: expected 1024 INPUT values, got 3"):
        ex.step({35: np.zeros(3)})
    with pytest.raises(CVMLogicError, match=r"expected 1024 or 2048 input values \(INPUT blocks: 35\), got 5"):
        input_frames(graph, np.zeros(5, dtype=np.int32), steps=2)
    frames = input_frames(graph, np.concatenate([lenet_input(), lenet_input()]), steps=2)
    assert len(frames) == 2 and frames[1][35].tolist() == lenet_input().tolist()


def test_float_values_are_rejected_with_the_block_and_field():
    P = ParamKind
    graph = _lif_graph([1], [0], {P.VTH0: 1})
    clif = graph.blocks[2]
    clif.params = type(clif.params)([ParamAttr.get(P.VLEAKY_ALPHA, None, None, 0.5)])
    with pytest.raises(CVMLogicError, match="block 2: attribute VLEAKY_ALPHA has the float value 0.5"):
        TaskGraphExecutor(graph)
