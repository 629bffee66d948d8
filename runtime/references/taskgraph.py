"""Task Rabbit: the reference executor of a `taskgraph.graph` on int32 data.

    executor = TaskGraphExecutor(graph)          # a verified taskgraph.graph
    outs = executor.step({35: image})            # {OUTPUT block id: flat int32 array}

Blocks run in topological order. A storage block keeps its value (its `data`, else zeros) between
steps and receives the boxes its input edges write; a compute block gathers its input clusters, then
computes its output cluster. An edge reads its source interface's box, applies its rearranges in
order and writes the result, reshaped row-major, into its destination interface's box. Arithmetic
wraps at 32 bits; declared precisions are labels, except where a block saturates (CCMPB, CCMPS,
CLUT, CLIF). A CLIF writes its new membrane potential back into the box it read it from, so the
state carries over to the next step. The semantics follow shared/spec/task-ir.md.

A graph the executor cannot run (a float value, a state edge with rearranges, a wrong input) raises
CVMLogicError naming the block and the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from cvmc.dialects.taskgraph import (
    PRECISION_RANGE,
    BlockOp,
    CaddOp,
    CavgOp,
    CaxOp,
    CcmpbOp,
    CcmpsOp,
    ClifOp,
    ClutOp,
    ComputeBlockOp,
    ConvBlockOp,
    CvmOp,
    CvsOp,
    CvvhOp,
    GraphOp,
    InputOp,
    OutputOp,
    ParamKind,
    RearrangeAttr,
    RearrangeKind,
    StorageBlockOp,
)
from cvmc.errors import CVMLogicError, CVMRuntimeError

P = ParamKind
_CLAMP28 = (-(2**27), 2**27 - 1)


# ---------------------------------------------------------------------------------------------------------
# Rearranges
# ---------------------------------------------------------------------------------------------------------


def apply_rearrange(r: RearrangeAttr, a: np.ndarray) -> np.ndarray:
    """The array a rearrange makes of `a` (see RearrangeAttr for the definitions)."""
    source = r.gather_map(a.shape)
    return np.where(source >= 0, a.reshape(-1)[np.maximum(source, 0)], 0).astype(a.dtype)


# ---------------------------------------------------------------------------------------------------------
# Block semantics
# ---------------------------------------------------------------------------------------------------------


def _wrap(a: np.ndarray) -> np.ndarray:
    """int32 two's-complement wrap-around of an integer array."""
    return np.asarray(a).astype(np.int64).astype(np.int32)


def _windows(x: np.ndarray, block: ComputeBlockOp):
    """Yield the (y, x, c) slices of the zero-padded input x (iy, ix, c), one per window offset
    (ky, kx), with the block's stride and dilation."""
    ky, kx, sy, sx, pu, pd, pl, pr, dy, dx = block.window()
    oy, ox = block.shape.dim("y"), block.shape.dim("x")
    padded = np.pad(x, ((pu, pd), (pl, pr), (0, 0)))
    for a in range(ky):
        for b in range(kx):
            y0, x0 = a * dy, b * dx
            yield a, b, padded[y0 : y0 + sy * (oy - 1) + 1 : sy, x0 : x0 + sx * (ox - 1) + 1 : sx]


def _int_attr(block: BlockOp, kind: ParamKind, default: int = 0) -> int:
    p = block.param(kind)
    if p is None:
        return default
    if not isinstance(p.value, int):
        raise CVMLogicError(f"block {block.id}: attribute {kind} has the float value {p.value}; "
                            "the executor computes on integers")  # fmt: skip
    return p.value


def _bias(block: ComputeBlockOp, inputs: list[np.ndarray]) -> np.ndarray | int:
    if block.has_vector_bias:
        return inputs[-1]
    return _int_attr(block, P.CONSTANT_B)


def _saturate(block: BlockOp, a: np.ndarray) -> np.ndarray:
    lo, hi = PRECISION_RANGE[block.get_precision()]
    return np.clip(a, lo, min(hi, 2**31 - 1))


def compute_block(block: ComputeBlockOp, inputs: list[np.ndarray]) -> np.ndarray:
    """The output cluster of a compute block from its input clusters (int64 in, int32 out)."""
    x = inputs[0]
    if isinstance(block, CaddOp):
        data = [a for a, role in zip(inputs, block.input_roles()) if role == "input"]
        return _wrap(np.sum(data, axis=0) + _bias(block, inputs))
    if isinstance(block, CvvhOp):
        return _wrap(x * inputs[1] + _bias(block, inputs))
    if isinstance(block, CaxOp):
        return _wrap(x * inputs[1] + _bias(block, inputs))
    if isinstance(block, CvsOp):
        return _wrap(x * _int_attr(block, P.CONSTANT_A) + _bias(block, inputs))
    if isinstance(block, CvmOp):
        return _wrap(inputs[1] @ x + _bias(block, inputs))
    if isinstance(block, ConvBlockOp):
        weight = inputs[1]  # [f, r, ky, kx]
        out = np.zeros((block.shape.dim("y"), block.shape.dim("x"), block.shape.dim("f")), dtype=np.int64)
        for a, b, window in _windows(x, block):
            out += window @ weight[:, :, a, b].T
        return _wrap(out + _bias(block, inputs))
    if isinstance(block, CavgOp | CcmpbOp | CcmpsOp):
        if not block.shape.dim("y"):  # 1-D: a 1x1 window
            reduced = x
        else:
            reduced = None
            for _, _, window in _windows(x, block):
                if reduced is None:
                    reduced = window.copy()
                elif isinstance(block, CavgOp):
                    reduced += window
                elif isinstance(block, CcmpbOp):
                    reduced = np.maximum(reduced, window)
                else:
                    reduced = np.minimum(reduced, window)
            assert reduced is not None
        if isinstance(block, CavgOp):
            return _wrap(reduced + _bias(block, inputs))
        shift = _int_attr(block, P.BIT_SHIGT_NUM)
        cmp = _int_attr(block, P.CMP)
        if isinstance(block, CcmpbOp):
            hi = min(PRECISION_RANGE[block.get_precision()][1], 2**31 - 1)
            return _wrap(np.minimum(np.maximum(reduced >> shift, cmp), hi))
        return _wrap(_saturate(block, np.minimum(reduced, cmp) >> shift))
    if isinstance(block, ClutOp):
        dw = _int_attr(block, P.LUT_DW)
        v = np.clip(x, -(2 ** (dw - 1)), 2 ** (dw - 1) - 1)
        return _wrap(inputs[1][np.where(v >= 0, v, v + 2**dw)])
    assert isinstance(block, ClifOp)
    out, _ = clif_step(block, x, inputs[1])
    return out


def clif_step(block: ClifOp, x: np.ndarray, v_mem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(spikes, new membrane potential) of a CLIF from the current x and the potential V."""
    v = np.clip(x + v_mem, *_CLAMP28)
    spike = v > _int_attr(block, P.VTH0)
    v = np.where(spike, _int_attr(block, P.VR), v)
    beta = _int_attr(block, P.VLEAKY_BETA)
    if _int_attr(block, P.VLEAKY_ADPT_EN):
        v_new = np.floor_divide(_int_attr(block, P.VLEAKY_ALPHA) * v, 256) + beta
    else:
        v_new = v + beta
    return spike.astype(np.int32), _wrap(np.clip(v_new, *_CLAMP28))


# ---------------------------------------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------------------------------------


def _slices(offsets: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(o, o + s) for o, s in zip(offsets, sizes))


class Stepper:
    """Runs a TaskGraph step by step; `step` (one time step: INPUT block values in, OUTPUT block values out) is
    the executor's or the JIT's."""

    def step(self, inputs: Mapping[int, np.ndarray] | None = None) -> dict[int, np.ndarray]:
        raise NotImplementedError

    def iter_steps(
        self, steps: int = 1, frames: Sequence[Mapping[int, np.ndarray]] | None = None
    ) -> Iterator[dict[int, np.ndarray]]:
        """Run `steps` steps one at a time, yielding each step's outputs as it ends (so a caller can stream
        them); step i takes frames[i] (or frames[0] for all, when one frame is given)."""
        frames = frames or [{}]
        if len(frames) not in (1, steps):
            raise CVMLogicError(f"expected 1 or {steps} input frames, got {len(frames)}")
        for i in range(steps):
            yield self.step(frames[i if len(frames) > 1 else 0])

    def run(
        self, steps: int = 1, frames: Sequence[Mapping[int, np.ndarray]] | None = None
    ) -> list[dict[int, np.ndarray]]:
        """Run `steps` steps, step i taking frames[i] (or frames[0] for all, when one frame is given)."""
        return list(self.iter_steps(steps, frames))


class TaskGraphExecutor(Stepper):
    """Runs a verified `taskgraph.graph` step by step; storage and CLIF state persist between steps."""

    def __init__(self, graph: GraphOp):
        self.graph = graph
        self.order = graph.topological_blocks()
        self.blocks = {b.id: b for b in self.order}
        self.edges = {e.id: e for e in graph.edges}
        self.inputs = [b for b in graph.blocks if isinstance(b, InputOp)]
        self.outputs = [b for b in graph.blocks if isinstance(b, OutputOp)]
        self.values: dict[int, np.ndarray] = {}
        for b in self.order:
            self._check_runnable(b)
            if isinstance(b, StorageBlockOp):
                try:
                    self.values[b.id] = self._initial_value(b)
                except MemoryError:
                    raise CVMRuntimeError(f"block {b.id}: out of memory allocating its {_size(b)} values") from None

    @staticmethod
    def _initial_value(b: StorageBlockOp) -> np.ndarray:
        shape = tuple(b.shape.extents().values())
        if b.data is None:
            return np.zeros(shape, dtype=np.int32)
        return _wrap(b.data.to_numpy().reshape(shape))

    def _check_runnable(self, b: BlockOp) -> None:
        if b.get_precision().name.startswith("FLOAT") and isinstance(b, ComputeBlockOp):
            raise CVMLogicError(f"block {b.id}: 'precision' {b.get_precision()} is not supported, "
                                "the executor computes on int32")  # fmt: skip
        if b.data is not None and b.data.container == "float":
            raise CVMLogicError(f"block {b.id}: float 'data' is not supported, the executor computes on int32")
        for p in b.params.data:
            if p.kind.data in (P.CONSTANT_A, P.CONSTANT_B, P.CMP, P.BIT_SHIGT_NUM, P.LUT_DW) or isinstance(b, ClifOp):
                _int_attr(b, p.kind.data)
        if isinstance(b, ClifOp):
            for iface in b.inputs.data[1].interfaces.data:
                edge = self.graph_edge(iface.edge.data)
                if any(r.rearrange_kind != RearrangeKind.IDENTITY for r in edge.rearranges.data):
                    raise CVMLogicError(f"block {b.id}: membrane edge {edge.id} has rearranges; the new "
                                        "potential cannot be written back through them")  # fmt: skip
                if not isinstance(self.blocks.get(edge.src), StorageBlockOp):
                    raise CVMLogicError(f"block {b.id}: membrane edge {edge.id} does not come from a storage block")

    def graph_edge(self, edge_id: int):
        return self.edges[edge_id]

    def _output_cluster(self, b: BlockOp, results: dict[int, np.ndarray]) -> np.ndarray:
        shape = tuple(b.cluster_extents("out", 0).values())
        source = self.values[b.id] if isinstance(b, StorageBlockOp) else results[b.id]
        return source.reshape(shape)

    def _gather(self, b: BlockOp, k: int, target: np.ndarray, results: dict[int, np.ndarray]) -> None:
        """Write every edge of input cluster k of `b` into `target` (an array of the cluster's shape)."""
        for iface in b.inputs.data[k].interfaces.data:
            edge = self.edges[iface.edge.data]
            src = self.blocks[edge.src]
            src_offsets, src_sizes = src.edge_box(edge.id, "out")
            box = self._output_cluster(src, results)[_slices(src_offsets, src_sizes)]
            for r in edge.rearranges.data:
                box = apply_rearrange(r, box)
            offsets, sizes = b.iface_box("in", k, iface)
            target[_slices(offsets, sizes)] = box.reshape(sizes)

    def step(self, inputs: Mapping[int, np.ndarray] | None = None) -> dict[int, np.ndarray]:
        """Run the graph once; `inputs` gives each INPUT block's values (flat or shaped).

        Returns each OUTPUT block's values, flat int32, by block id.
        """
        inputs = dict(inputs or {})
        for b in self.inputs:
            if b.id not in inputs:
                raise CVMLogicError(f"block {b.id}: no values given for INPUT")
            value = np.asarray(inputs.pop(b.id))
            shape = self.values[b.id].shape
            if value.size != self.values[b.id].size:
                raise CVMLogicError(f"block {b.id}: expected {self.values[b.id].size} INPUT values, got {value.size}")
            self.values[b.id] = _wrap(value.reshape(shape))
        if inputs:
            raise CVMLogicError(f"values given for blocks {sorted(inputs)}, which are not INPUT blocks")

        results: dict[int, np.ndarray] = {}
        for b in self.order:
            try:
                self._run_block(b, results)
            except MemoryError:
                raise CVMRuntimeError(f"block {b.id}: out of memory running its {b.kind} step") from None
        return {b.id: self.values[b.id].reshape(-1).copy() for b in self.outputs}

    def _run_block(self, b: BlockOp, results: dict[int, np.ndarray]) -> None:
        if isinstance(b, StorageBlockOp):
            if b.inputs.data:
                shape = tuple(b.cluster_extents("in", 0).values())
                value = self.values[b.id].reshape(shape)
                self._gather(b, 0, value, results)
                self.values[b.id] = value.reshape(self.values[b.id].shape)
            return
        assert isinstance(b, ComputeBlockOp)
        clusters = []
        for k in range(len(b.inputs.data)):
            cluster = np.zeros(tuple(b.cluster_extents("in", k).values()), dtype=np.int64)
            self._gather(b, k, cluster, results)
            clusters.append(cluster)
        if isinstance(b, ClifOp):
            out, v_new = clif_step(b, clusters[0], clusters[1])
            self._write_back_membrane(b, v_new, results)
        else:
            out = compute_block(b, clusters)
        results[b.id] = out.reshape(tuple(b.cluster_extents("out", 0).values()))

    def _write_back_membrane(self, b: ClifOp, v_new: np.ndarray, results: dict[int, np.ndarray]) -> None:
        """Store a CLIF's new membrane potential where it read the potential from."""
        for iface in b.inputs.data[1].interfaces.data:
            edge = self.edges[iface.edge.data]
            src = self.blocks[edge.src]
            offsets, sizes = b.iface_box("in", 1, iface)
            src_offsets, src_sizes = src.edge_box(edge.id, "out")
            view = self._output_cluster(src, results)
            view[_slices(src_offsets, src_sizes)] = v_new[_slices(offsets, sizes)].reshape(src_sizes)


def _size(b: BlockOp) -> int:
    return math.prod(b.shape.extents().values())


def frame_values(graph: GraphOp) -> int:
    """How many int32 values one input frame holds: the sizes of the INPUT blocks, summed."""
    return sum(_size(b) for b in graph.blocks if isinstance(b, InputOp))


def input_frames(graph: GraphOp, flat: np.ndarray, steps: int = 1) -> list[dict[int, np.ndarray]]:
    """Split raw int32 input values into frames: each frame is the INPUT blocks' values in file order,
    one frame for all steps or one per step."""
    blocks = [b for b in graph.blocks if isinstance(b, InputOp)]
    sizes = [_size(b) for b in blocks]
    per_frame = sum(sizes)
    if flat.size == per_frame:
        count = 1
    elif steps > 1 and flat.size == per_frame * steps:
        count = steps
    else:
        expected = f"{per_frame}" + (f" or {per_frame * steps}" if steps > 1 else "")
        names = ", ".join(str(b.id) for b in blocks) or "none"
        raise CVMLogicError(f"expected {expected} input values (INPUT blocks: {names}), got {flat.size}")
    frames = []
    for f in range(count):
        start = f * per_frame
        frame = {}
        for b, n in zip(blocks, sizes):
            frame[b.id] = flat[start : start + n]
            start += n
        frames.append(frame)
    return frames
