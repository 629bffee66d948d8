"""The public model API: load a CVM model, run it on a device, and pack outputs as `CVMAPIInference` does.

    m = cvmc.load_model("model.json", "params.bin", device="cpu")
    m.gas                    # as CVMAPIGetGasFromModel
    m.run(x)                 # numpy array of the input shape -> list of int32 arrays, one per head
    m.infer(input_bytes)     # bytes -> bytes, exactly CVMAPIInference's packing

Devices: "reference" (the numpy interpreter, the executable spec), "cpu" (the LLVM JIT), "cuda" (NVRTC kernels).
A model is verified once at load, before any code is generated; every device computes the same bits.

Memory is bounded at load: `load_model(..., max_memory=BYTES)` refuses (CVMLogicError) a model whose working
memory on the device exceeds BYTES, before it is allocated. The working memory is, on cpu and cuda, the planned
arena plus the input buffer and the heads a run returns; on the reference device, the peak of the tensors it
holds at once, its temporaries included (`reference.peak_bytes`). The default is the runtime's limit, 2^40 bytes
(spec section 3).
Running out of memory anyway (a ulimit, a full machine) is a CVMRuntimeError naming what was being allocated.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, overload

import numpy as np

from cvmc.dialects.cvm_rules import MAX_MEMORY, precision_bound
from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError
from cvmc.runtime.engine.threads import MAX_THREADS, default_threads, physical_cores
from cvmc.runtime.frontend.graph import Graph, load_graph

__all__ = ["DEFAULT_DEVICE", "Model", "default_threads", "dump_stages", "load_model", "pack_outputs", "physical_cores"]

if TYPE_CHECKING:
    from cvmc.runtime.devices.aot_serve import AotModel
    from cvmc.runtime.driver.compile import StageDump
    from cvmc.runtime.driver.host import HostProgram
    from cvmc.runtime.frontend.folder import Quantization


def _info(message: str, *args: object) -> None:
    """Log `message` at INFO on this module's logger, where the process has logging at all: a process that never
    imported `logging` has no handler nor level set to show it (and a load need not import it)."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger(__name__).info(message, *args)


def dump_stages(graph: Graph, directory: str | os.PathLike[str], device: str) -> list[str]:
    """Every stage of `graph`'s compilation for `device` as a file in `directory` (`compile.dump_stages`, imported
    on first use: the compiler is no import of a load)."""
    from cvmc.runtime.driver.compile import dump_stages as dump

    return dump(graph, directory, device)


DEFAULT_DEVICE = "cpu"
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
Runner = Callable[[np.ndarray | None], list[np.ndarray]]
# A device's compiler calls this with its plan before it allocates anything; it raises to refuse the plan.
PlanCheck = Callable[["HostProgram"], None]


def _reference(graph: Graph) -> Runner:
    from cvmc.runtime.references.cvm import run_graph

    return lambda data: run_graph(graph, data)


def _cpu(graph: Graph, check_plan: PlanCheck | None = None, threads: int | None = None,
         dump: StageDump | None = None) -> Runner:
    from cvmc.runtime.devices.cpu import compile_graph

    return compile_graph(graph, threads=threads, check_plan=check_plan, dump=dump)


def _cuda(graph: Graph, check_plan: PlanCheck | None = None, dump: StageDump | None = None) -> Runner:
    from cvmc.runtime.devices.cuda import compile_graph

    return compile_graph(graph, check_plan=check_plan, dump=dump)


DEVICES: dict[str, Callable[[Graph], Runner]] = {"reference": _reference, "cpu": _cpu, "cuda": _cuda}
# The devices that plan an arena take a `check_plan` (unless DEVICES maps the name to another factory).
PLANNED: dict[str, Callable[[Graph, PlanCheck | None], Runner]] = {"cpu": _cpu, "cuda": _cuda}


def program_bytes(program: HostProgram) -> int:
    """The working memory of a compiled program: its arena, its input buffer and the heads a run returns."""
    heads = sum(4 * prod(v.shape) for v in program.heads)
    return program.arena_bytes + (4 * prod(program.input_shape) if program.input_shape is not None else 0) + heads


def _check_memory_limit(max_memory: object) -> int:
    if isinstance(max_memory, bool) or not isinstance(max_memory, int | np.integer) or max_memory <= 0:
        raise CVMLogicError(f"expected 'max_memory' to be a positive number of bytes, got {max_memory!r}")
    return int(max_memory)


def accepts_shape(found: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether an input of shape `found` is one of shape `shape`: the shape itself, the shape without some of its
    leading 1s (an image (1, 8, 8) or (8, 8) for a model of (1, 1, 8, 8)), or its values flat (a row of 64 for
    (1, 64))."""
    ones = next((i for i, d in enumerate(shape) if d != 1), len(shape))
    return any(found == shape[k:] for k in range(ones + 1)) or (len(found) == 1 and found[0] == prod(shape))


def _shape_text(shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return str(list(shape))
    lead = " without its leading 1s," if shape[:1] == (1,) and len(shape) > 1 else ""
    return f"{list(shape)} (or{lead} its {prod(shape)} values flat)".replace(", its", " or its")


def _input_array(x: object, shape: tuple[int, ...], batch: bool = False, precision: int | None = None) -> np.ndarray:
    """The caller's input as an integer array of the input's shape (`batch`: a stack of them, (N, *shape)), every
    value within int32 (the API's input type): floats, strings and values an int32 cannot hold are refused, never
    truncated or wrapped; a shape other than those `accepts_shape` is refused even where the sizes agree (an NHWC image
    for an NCHW model), and uint8 data above the input's precision is refused rather than saturated (an image of
    0..255 would read as 0..127)."""
    what = "a stack of inputs" if batch else "the input as an integer array"
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as e:  # ragged nested lists, objects numpy cannot hold
        raise CVMLogicError(f"expected {what} of shape {list(shape)}: {e}") from None
    if batch and a.ndim < 1:
        raise CVMLogicError(f"expected a stack of inputs of shape {list(shape)}, got a scalar")
    found = tuple(a.shape[1:]) if batch else tuple(a.shape)
    if not accepts_shape(found, shape):
        raise CVMLogicError(f"expected {'a stack of N inputs, each' if batch else 'an input'} of shape "
                            f"{_shape_text(shape)}, got {list(a.shape)}")
    if a.dtype.kind not in "iub":
        raise CVMLogicError(f"expected an integer input, got dtype {a.dtype}")
    if a.dtype.kind != "b" and a.size and np.dtype(a.dtype).itemsize >= 4 and a.dtype != np.int32:
        lo, hi = int(a.min()), int(a.max())
        if lo < INT32_MIN or hi > INT32_MAX:
            bad = lo if lo < INT32_MIN else hi
            raise CVMLogicError(f"expected input values in int32 [{INT32_MIN}, {INT32_MAX}], got {bad} "
                                f"(dtype {a.dtype})")
    if precision is not None and a.dtype == np.uint8 and a.size:
        bound = precision_bound(precision)
        hi = int(a.max())
        if hi > bound:
            raise CVMLogicError(f"expected uint8 input values in [0, {bound}] (the input's precision is {precision} "
                                f"bits: [-{bound}, {bound}]), got {hi}: they would saturate at {bound}; scale them "
                                f"first (a folder with quantize.json takes floats), or pass a signed array to "
                                f"saturate on purpose")
    return a.reshape((a.shape[0], *shape) if batch else shape)


def _check_threads(threads: object) -> int | None:
    """None (the default: `threads.default_threads`), or a thread count in [1, MAX_THREADS]."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, int | np.integer) or not 1 <= threads <= MAX_THREADS:
        raise CVMLogicError(f"expected 'threads' to be an integer in [1, {MAX_THREADS}], got {threads!r}")
    return int(threads)


class Model:
    """A verified CVM model compiled for one device, within `max_memory` bytes of working memory.

    `threads` (cpu): how many threads a run splits its large kernels over, and how many inputs `run_batch` runs
    at once. A Model pickles: it carries its two files' bytes, which are read and verified again where it lands
    (a pickle is data like any model file), and compiles again (from the cache).

    Attributes: `name` (the graph file's path, the builder's name, or None), `device`, `threads`, `gas`,
    `quantization` (the scales of quantize.json when loaded from a folder that has one: `run` then takes floats
    and returns floats, see `run_float`; else None),
    `input_shape` and `input_precision` (None for a model without input), `output_shapes` and `output_precisions`
    (one per head), `max_memory` and `memory_bytes` (the limit, and the working memory the device planned), `graph`
    (the verified `Graph`), `stats` (the device's compile figures: `compile_ms`, or `load_ms` when the compiled code
    came from the cache, `lower_ms`, `lowered` (False: a warm load, nothing lowered or compiled), `kernels`,
    `cache_hit`, ...; `load_model` adds `read_ms`, the files read and verified)."""

    def __init__(self, graph: Graph, device: str = DEFAULT_DEVICE, max_memory: int = MAX_MEMORY,
                 threads: int | None = None, dump: str | os.PathLike[str] | None = None):
        if not isinstance(device, str) or device not in DEVICES:
            raise CVMLogicError(f"unknown device {device!r}, expected one of {sorted(DEVICES)}")  # the caller's
        self.graph = graph
        self.device = device
        self.name: str | None = None  # what the model is called: its graph file, or its builder's name
        self.quantization: Quantization | None = None  # its scales (quantize.json), when loaded from a folder
        self.max_memory = _check_memory_limit(max_memory)
        self.threads = _check_threads(threads) or default_threads()
        self._replicas: list[Runner] = []
        stages = None  # the device's compile writes each stage as it passes through it (one lowering)
        if dump is not None and device == "reference":
            dump_stages(graph, dump, device)
        elif dump is not None:
            from cvmc.runtime.driver.compile import StageDump

            stages = StageDump(dump)
        self.memory_bytes: int | None = None  # the working memory, once the device's plan is known
        if device == "reference":
            from cvmc.runtime.references.cvm import peak_bytes

            self._check_memory(peak_bytes(graph), "the peak of live tensors and an operator's temporaries on the "
                                                  "reference device")

        def check(program: HostProgram) -> None:
            self._check_memory(program_bytes(program), f"the arena planned for {device}, its input and its heads")

        try:
            factory, planned = DEVICES[device], PLANNED.get(device)
            if device == "cpu" and planned is factory:
                self._run = _cpu(graph, check, self.threads, stages)
            elif device == "cuda" and planned is factory:
                self._run = _cuda(graph, check, stages)
            else:
                self._run = planned(graph, check) if planned is not None and planned is factory else factory(graph)
        except MemoryError:
            if self.memory_bytes is None or device == "reference":
                raise CVMRuntimeError(f"out of memory compiling the model for the {device} device") from None
            raise CVMRuntimeError(f"out of memory setting up the {device} device for the model: its plan needs "
                                  f"{self.memory_bytes} bytes of working memory") from None
        stats: dict[str, object] = dict(getattr(self._run, "stats", {}))
        if stats.get("cache_hit") and "compile_ms" in stats:  # nothing compiled: code loaded from the cache
            stats = {("load_ms" if k == "compile_ms" else k): v for k, v in stats.items()}
        self.stats = stats
        nid = graph.input_id
        self.input_shape: tuple[int, ...] | None = graph.nodes[nid].shapes[0] if nid is not None else None
        self.input_precision: int | None = graph.nodes[nid].precisions[0] if nid is not None else None

    def __repr__(self) -> str:
        name = "" if self.name is None else f"{self.name!r}, "
        scales = "" if self.quantization is None else f", quantization=({self.quantization})"
        return (f"Model({name}device={self.device!r}, input_shape={self.input_shape}, "
                f"output_shapes={self.output_shapes}, gas={self.gas}, threads={self.threads}{scales})")

    @classmethod
    def from_graph(cls, graph: Graph, device: str = DEFAULT_DEVICE, max_memory: int = MAX_MEMORY,
                   threads: int | None = None) -> Model:
        return cls(graph, device, max_memory, threads)

    def __getstate__(self) -> dict[str, object]:
        """The model as its two files' bytes (the verified graph written as cvm-runtime's `model.json` and
        `params.bin`), which `__setstate__` reads and verifies again: nothing in a pickle is trusted."""
        import json

        from cvmc.runtime.frontend.graph import graph_to_json, write_params

        files = (json.dumps(graph_to_json(self.graph), ensure_ascii=False).encode(), write_params(self.graph.params))
        return {"files": files, "device": self.device, "max_memory": self.max_memory, "threads": self.threads,
                "name": self.name,
                "quantization": None if self.quantization is None else self.quantization.facts()}

    def __setstate__(self, state: object) -> None:
        files = state.get("files") if isinstance(state, dict) else None
        if not (isinstance(files, tuple) and len(files) == 2 and all(isinstance(f, bytes) for f in files)):
            raise CVMRuntimeError("not the pickle of a cvmc Model: expected the two model files' bytes (a pickle "
                                  "of an older cvmc carries the graph itself, which is not trusted: pickle it again)")
        assert isinstance(state, dict)
        device, max_memory, threads = state.get("device"), state.get("max_memory", MAX_MEMORY), state.get("threads")
        self.__init__(load_graph(*files), device, max_memory, threads)  # type: ignore[arg-type]
        name = state.get("name")
        self.name = name if isinstance(name, str) else None
        facts = state.get("quantization")
        if facts is not None:  # checked again, as quantize.json is
            from cvmc.runtime.frontend.folder import quantization_from

            self.quantization = quantization_from(facts, "the pickle's quantization", self.input_shape,
                                                  self.input_precision, len(self.output_shapes))

    def _runners(self, n: int) -> list[Runner]:
        """`n` runners that may run at once: this model's and replicas with arenas of their own over the same
        compiled code (cpu; other devices run one input at a time)."""
        program = getattr(self._run, "program", None)
        engine = getattr(self._run, "engine", None)
        if self.device != "cpu" or program is None or engine is None or n <= 1:
            return [self._run]
        from cvmc.runtime.devices.cpu import CpuRunner

        while len(self._replicas) < n - 1:
            self._replicas.append(CpuRunner(program, engine, 1))
        return [self._run, *self._replicas[:n - 1]]

    def run_batch(self, xs: object, progress: Callable[[int], None] | None = None, *, replicas: int | None = None,
                  threads: int | None = None) -> list[np.ndarray]:
        """Run a stack of inputs (`xs[i]` of the input's shape, or as `run` takes it): one stacked int32 array per
        head, `out[h][i]` equal to `run(xs[i])[h]`; a stack of floats gives floats (a model with scales: `run`).
        On cpu the inputs are spread over `replicas` copies of the model run at once (default: the model's
        `threads`), each with an arena of its own; `progress(n)` is called as each input ends (from those
        threads). `threads=` is the old name of `replicas` (deprecated: `threads` is the model's thread count)."""
        if threads is not None:
            import warnings

            warnings.warn("run_batch(threads=N) is deprecated: it counts replicas, so it is now run_batch("
                          "replicas=N) (a model's threads are set at load_model)", DeprecationWarning, stacklevel=2)
            replicas = threads if replicas is None else replicas
        if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int | np.integer)
                                     or not 1 <= replicas <= MAX_THREADS):
            raise CVMLogicError(f"expected 'replicas' to be an integer in [1, {MAX_THREADS}], got {replicas!r}")
        if self.input_shape is None:
            raise CVMLogicError("run_batch needs a model with an input")
        if self._floats(xs):
            assert self.quantization is not None
            outs = self.run_batch(self.quantization.encode(self._float_array(xs, batch=True)), progress,
                                  replicas=replicas)
            return self.quantization.decode(outs)
        stacked = _input_array(xs, self.input_shape, batch=True, precision=self.input_precision)
        n = stacked.shape[0]
        bound = precision_bound(self.input_precision or 32)
        data = np.clip(stacked if stacked.dtype == np.int32 else stacked.astype(np.int64), -bound, bound)
        data = data.astype(np.int32)
        results: list[list[np.ndarray] | None] = [None] * n
        runners = self._runners(min(replicas or self.threads, max(n, 1)))
        if len(runners) == 1:
            for i in range(n):
                results[i] = self._call(data[i])
                if progress is not None:
                    progress(1)
        else:
            from concurrent.futures import ThreadPoolExecutor

            def work(k: int) -> None:
                for i in range(k, n, len(runners)):
                    results[i] = runners[k](data[i])
                    if progress is not None:
                        progress(1)

            with ThreadPoolExecutor(len(runners)) as pool:
                for f in [pool.submit(work, k) for k in range(len(runners))]:
                    f.result()
        heads = len(self.output_shapes)
        return [np.stack([r[h] for r in results if r is not None]) if n else
                np.zeros((0, *self.output_shapes[h]), np.int32) for h in range(heads)]

    def _check_memory(self, needed: int, what: str) -> None:
        self.memory_bytes = needed
        if needed > self.max_memory:
            raise CVMLogicError(f"the model needs {needed} bytes of working memory ({what}), more than the "
                                f"limit of {self.max_memory} bytes")

    def _call(self, data: np.ndarray | None) -> list[np.ndarray]:
        try:
            return self._run(data)
        except MemoryError:
            raise CVMRuntimeError(f"out of memory running the model on the {self.device} device (it plans "
                                  f"{self.memory_bytes} bytes of working memory)") from None

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

    def run(self, x: object = None) -> list[np.ndarray]:
        """Every head as an int32 array; the input is saturated to its precision first, as the runtime does. Given
        floats, a model loaded with its scales (a folder with quantize.json) encodes them and returns each head as
        floats (`run_float`); without scales floats are refused."""
        if self.input_shape is None:
            return self._call(None)
        if x is None:
            raise CVMLogicError(f"the model needs an input of shape {list(self.input_shape)}")
        if self._floats(x):
            return self.run_float(x)
        a = _input_array(x, self.input_shape, precision=self.input_precision)
        assert self.input_precision is not None
        bound = np.int64(precision_bound(self.input_precision))
        try:  # into a fresh int32 array: the values fit it (`_input_array`), saturated ones too
            data = np.clip(a, -bound, bound, out=np.empty(self.input_shape, np.int32), casting="unsafe")
        except MemoryError:
            raise CVMRuntimeError(f"out of memory copying the input of shape {list(self.input_shape)}") from None
        return self._call(data)

    def _floats(self, x: object) -> bool:
        """Whether `x` is float data (then the model must have its scales: refused with a hint otherwise)."""
        try:
            kind = x.dtype.kind if isinstance(x, np.ndarray) else np.asarray(x).dtype.kind
        except (ValueError, TypeError):
            return False  # `_input_array` names the fault
        if kind != "f":
            return False
        if self.quantization is None:
            raise CVMLogicError(f"expected an integer input, got dtype {np.asarray(x).dtype}: floats, but this model "
                                f"has no scales; load the folder cvm-quantize wrote (cvmc.load_model('DIR/'), its "
                                f"quantize.json gives input_scale), or pass clip(round(x / input_scale)) as integers")
        return True

    def _float_array(self, x: object, batch: bool = False) -> np.ndarray:
        assert self.input_shape is not None
        a = np.asarray(x)
        found = tuple(a.shape[1:]) if batch and a.ndim else tuple(a.shape)
        if (batch and a.ndim < 1) or not accepts_shape(found, self.input_shape):
            raise CVMLogicError(f"expected {'a stack of N float inputs, each' if batch else 'a float input'} of "
                                f"shape {_shape_text(self.input_shape)}, got {list(a.shape)}")
        if a.size and not np.all(np.isfinite(a)):
            raise CVMLogicError("expected finite float input values, got NaN or infinity")
        return a.reshape((a.shape[0], *self.input_shape) if batch else self.input_shape)

    def run_float(self, x: object) -> list[np.ndarray]:
        """Float in, float out: `x` encoded with the model's `quantization` (`clip(round(x / input_scale))`), run,
        and each head decoded (x its output scale), as `cvmc.quantize`'s `Quantized.decode(m.run(q.encode(x)))`."""
        if self.quantization is None:
            raise CVMLogicError("run_float needs the model's scales: load the folder cvm-quantize wrote "
                                "(cvmc.load_model('DIR/'), with its quantize.json)")
        a = self._float_array(x)
        return self.quantization.decode(self.run(self.quantization.encode(a)))

    def infer(self, input_bytes: bytes) -> bytes:
        """`CVMAPIInference`: input bytes (int8 when the input precision <= 8, else int32 LE) -> packed output."""
        if not isinstance(input_bytes, bytes | bytearray | memoryview):
            raise CVMLogicError(f"expected the input as bytes, got {type(input_bytes).__name__}")
        input_bytes = bytes(input_bytes)  # a memoryview of any format counts in bytes
        if self.input_shape is None:
            return self._pack(self._call(None))
        assert self.input_precision is not None
        n = prod(self.input_shape)
        width = 1 if self.input_precision <= 8 else 4
        if len(input_bytes) != n * width:
            raise CVMLogicError(f"expected {n * width} input bytes ({n} x int{8 * width}), got {len(input_bytes)}")
        x = np.frombuffer(input_bytes, dtype="<i1" if width == 1 else "<i4").reshape(self.input_shape)
        return self._pack(self.run(x))

    def _pack(self, outs: list[np.ndarray]) -> bytes:
        try:
            return pack_outputs(self.graph, outs)
        except MemoryError:
            raise CVMRuntimeError(f"out of memory packing the {sum(o.size for o in outs)} output values") from None


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


def _named(x: object) -> str:
    return repr(os.fspath(x)) if isinstance(x, str | os.PathLike) and len(os.fspath(x)) < 200 else \
        f"a {type(x).__name__}"


ModelSource = bytes | str | os.PathLike[str]


@overload
def load_model(graph_json: ModelSource, params: ModelSource | None = None, device: str = DEFAULT_DEVICE,
               max_memory: int = MAX_MEMORY, threads: int | None = None, dump: str | os.PathLike[str] | None = None,
               *, store: None = None) -> Model: ...


@overload
def load_model(graph_json: ModelSource, params: ModelSource | None = None, device: str = DEFAULT_DEVICE,
               max_memory: int = MAX_MEMORY, threads: int | None = None, dump: str | os.PathLike[str] | None = None,
               *, store: str | os.PathLike[str]) -> AotModel: ...


def load_model(graph_json: ModelSource, params: ModelSource | None = None, device: str = DEFAULT_DEVICE,
               max_memory: int = MAX_MEMORY, threads: int | None = None, dump: str | os.PathLike[str] | None = None,
               *, store: str | os.PathLike[str] | None = None) -> Model | AotModel:
    """Load, verify and compile a cvm-runtime model (graph JSON and params binary: bytes, a path, or text), or
    a model folder (`load_model("net/")`: its model.json and params.bin, and its quantize.json when present, which
    gives the model its `quantization`: `run` then takes and returns floats). `store=DIR` serves the model's entry
    in an AOT store (`cvm-aot build`) through the C library instead: an `aot_serve.AotModel`, nothing compiled.

    A model whose working memory on `device` exceeds `max_memory` bytes is refused with a CVMLogicError.
    `threads` (cpu): default `$CVMC_THREADS`, else the physical cores, at most the CPUs this process may use
    (`threads.default_threads`). `dump=DIR` writes every stage of the compilation into DIR (see `dump_stages`)."""
    if store is not None:  # served by the AOT library from the store: nothing is compiled, nor imported for it
        from cvmc.runtime.devices.aot_serve import load

        return load(graph_json, params, store=store)
    folder, scales = None, None
    if params is None:
        from cvmc.runtime.frontend.folder import is_folder, model_files

        if not is_folder(graph_json):
            raise CVMLogicError(f"expected a model folder (model.json, params.bin) or two files, got "
                                f"{_named(graph_json)} alone: pass the params too, or the folder")
        assert isinstance(graph_json, str | os.PathLike)  # is_folder holds
        folder = os.fspath(graph_json)
        graph_json, params, scales = model_files(folder)
    threads = _check_threads(threads)
    max_memory = _check_memory_limit(max_memory)
    t0 = time.perf_counter()
    try:
        graph = load_graph(graph_json, params)
    except MemoryError:
        raise CVMRuntimeError("out of memory reading the model files") from None
    except CVMError as e:  # the runtime's class, with the files named when they came in the wrong order
        from cvmc.runtime.frontend.folder import swapped

        if swapped(graph_json, params):
            raise type(e)(f"{e} (the files are swapped: load_model({_named(graph_json)}, {_named(params)}) takes "
                          f"the graph JSON first, then the params)") from None
        raise
    t1 = time.perf_counter()
    _info("loaded and verified the model (%d nodes, gas %d) in %.1f ms", len(graph.nodes), graph.gas,
             (t1 - t0) * 1e3)
    model = Model(graph, device, max_memory, threads, dump)
    model.stats["read_ms"] = round(1000 * (t1 - t0), 1)  # the two files read and verified
    if isinstance(graph_json, os.PathLike) or (isinstance(graph_json, str) and graph_json.lstrip()[:1] not in "{["):
        model.name = os.fspath(graph_json)
    if folder is not None:
        model.name = folder
    if scales is not None:
        from cvmc.runtime.frontend.folder import read_quantization

        model.quantization = read_quantization(scales, model.input_shape, model.input_precision,
                                               len(model.output_shapes))
    _info("compiled it for the %s device in %.1f ms", device, (time.perf_counter() - t1) * 1e3)
    return model
