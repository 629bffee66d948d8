"""The public model API: load a CVM model, run it on a device, and pack outputs as `CVMAPIInference` does.

    m = cvmc.load_model("model.json", "params.bin", device="cpu")
    m.gas                    # as CVMAPIGetGasFromModel
    m.run(x)                 # numpy array of the input shape -> list of int32 arrays, one per head
    m.infer(input_bytes)     # bytes -> bytes, exactly CVMAPIInference's packing

Devices: "reference" (the numpy interpreter, the executable spec), "cpu" (the LLVM JIT), "cuda" (NVRTC kernels).
A model is verified once at load, before any code is generated; every device computes the same bits.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from math import prod

import numpy as np

from cvmc.dialects.cvm_rules import precision_bound
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.graph import Graph, load_graph

DEFAULT_DEVICE = "cpu"
Runner = Callable[[np.ndarray | None], list[np.ndarray]]


def _reference(graph: Graph) -> Runner:
    from cvmc.runtime.reference import run_graph

    return lambda data: run_graph(graph, data)


def _cpu(graph: Graph) -> Runner:
    from cvmc.runtime.cpu import compile_graph

    return compile_graph(graph)


def _cuda(graph: Graph) -> Runner:
    from cvmc.runtime.cuda import compile_graph

    return compile_graph(graph)


DEVICES: dict[str, Callable[[Graph], Runner]] = {"reference": _reference, "cpu": _cpu, "cuda": _cuda}


class Model:
    """A verified CVM model compiled for one device."""

    def __init__(self, graph: Graph, device: str = DEFAULT_DEVICE):
        if device not in DEVICES:
            raise CVMRuntimeError(f"unknown device {device!r}, expected one of {sorted(DEVICES)}")
        self.graph = graph
        self.device = device
        self._run = DEVICES[device](graph)
        self.stats: dict[str, object] = dict(getattr(self._run, "stats", {}))
        nid = graph.input_id
        self.input_shape: tuple[int, ...] | None = graph.nodes[nid].shapes[0] if nid is not None else None
        self.input_precision: int | None = graph.nodes[nid].precisions[0] if nid is not None else None

    @classmethod
    def from_graph(cls, graph: Graph, device: str = DEFAULT_DEVICE) -> Model:
        return cls(graph, device)

    @property
    def gas(self) -> int:
        """The model's gas, as `CVMAPIGetGasFromModel` reports it."""
        return self.graph.gas

    @property
    def output_shapes(self) -> list[tuple[int, ...]]:
        return self.graph.head_shapes()

    @property
    def output_precisions(self) -> list[int]:
        return self.graph.head_precisions()

    def run(self, x: np.ndarray | None = None) -> list[np.ndarray]:
        """Every head as an int32 array; the input is saturated to its precision first, as the runtime does."""
        if self.input_shape is None:
            return self._run(None)
        if x is None:
            raise CVMLogicError(f"the model needs an input of shape {list(self.input_shape)}")
        a = np.asarray(x)
        if a.dtype.kind not in "iub":
            raise CVMLogicError(f"expected an integer input, got dtype {a.dtype}")
        if tuple(a.shape) != self.input_shape:
            if a.size != prod(self.input_shape):
                raise CVMLogicError(f"expected an input of shape {list(self.input_shape)}, got {list(a.shape)}")
            a = a.reshape(self.input_shape)
        assert self.input_precision is not None
        bound = precision_bound(self.input_precision)
        data = np.clip(a.astype(np.int64), -bound, bound).astype(np.int32)
        return self._run(data)

    def infer(self, input_bytes: bytes) -> bytes:
        """`CVMAPIInference`: input bytes (int8 when the input precision <= 8, else int32 LE) -> packed output."""
        if self.input_shape is None:
            return pack_outputs(self.graph, self._run(None))
        assert self.input_precision is not None
        n = prod(self.input_shape)
        width = 1 if self.input_precision <= 8 else 4
        if len(input_bytes) != n * width:
            raise CVMLogicError(f"expected {n * width} input bytes ({n} x int{8 * width}), got {len(input_bytes)}")
        x = np.frombuffer(input_bytes, dtype="<i1" if width == 1 else "<i4").reshape(self.input_shape)
        return pack_outputs(self.graph, self.run(x))


def pack_outputs(graph: Graph, outs: list[np.ndarray]) -> bytes:
    """CVMModel::SaveTensor (model.cc:150): the API's packing of the heads into one buffer.

    argmax: per head, the index of the first largest int8-truncated value of a row; the runtime's loop steps its
    row index by the row length, so a head of R rows of length L fills ceil(R / L) of its R slots (the rest stay as
    the caller's buffer had them: zero here). detection, or more than one head: the heads are interleaved row by
    row, a row being the last dimension; heads of different row counts, or a detection model with one head,
    cannot be packed (a logic error). Otherwise the heads are concatenated. Values are int32 when a head's
    precision exceeds 8 or a postprocess is set, else int8."""
    post = graph.postprocess
    wide = post is not None or max(graph.head_precisions(), default=0) > 8
    if post == "argmax":
        parts = []
        for o in outs:
            last = o.shape[-1]
            rows = o.astype(np.int8).reshape(-1, last)
            slots = np.zeros(rows.shape[0], "<i4")
            done = -(-rows.shape[0] // last)
            slots[:done] = np.argmax(rows[:done], axis=1)
            parts.append(slots.tobytes())
        return b"".join(parts)
    dtype = "<i4" if wide else "<i1"
    if post == "detection" or len(outs) > 1:
        if len(outs) == 1:
            raise CVMLogicError("detection model output cannot concat: it has one head")
        rows = [o.size // o.shape[-1] for o in outs]
        if len(set(rows)) != 1:
            shapes = [list(o.shape) for o in outs]
            raise CVMLogicError(f"detection model output cannot concat: heads {shapes} have {rows} rows")
        packed = np.concatenate([o.reshape(rows[0], o.shape[-1]) for o in outs], axis=1)
        return packed.astype(dtype).tobytes()
    return b"".join(o.astype(dtype).tobytes() for o in outs)


def load_model(graph_json: bytes | str | os.PathLike[str], params: bytes | str | os.PathLike[str],
               device: str = DEFAULT_DEVICE) -> Model:
    """Load, verify and compile a cvm-runtime model (graph JSON and params binary: bytes, a path, or text)."""
    return Model(load_graph(graph_json, params), device)
