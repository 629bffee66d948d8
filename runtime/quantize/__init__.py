"""`cvmc.quantize`: a float ONNX model (opset 13 and later) to a CVM model, by post-training quantization.

    import cvmc
    q = cvmc.quantize("model.onnx", calibration)       # calibration: float32 inputs, (N, *input_shape[1:])
    q.save("out/")                                      # out/model.json, out/params.bin, out/quantize.json
    m = q.model("cpu")                                  # the CVM model, loaded
    logits = q.decode(m.run(q.encode(x)))               # float in, float out
    print(q.report.text())                              # per layer shifts, precision and SQNR; agreement; gas

The CVM input is `clip(round(x / input_scale))` to `input_precision` bits (8); each head h gives float values
~= its integers x `output_scales[h]`. Calibration picks per-tensor power-of-two steps ('mse' by default: among
the largest step that clips nothing and the four finer ones, the one of least squared error on the calibration
data; 'minmax': the step that clips nothing). Weights are int8 per tensor (symmetric, max |w| -> 127), biases int32
at the accumulator's scale. See `emit` for the precision rules the graph obeys and `onnx_graph` for the operators.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.quantize import onnx_graph
from cvmc.runtime.quantize.emit import DATA_PRECISION, METHODS, choose_shift, emit
from cvmc.runtime.quantize.inputs import DEFAULT_MAX_MEMORY, Budget, read_array
from cvmc.runtime.quantize.report import LayerReport, Report, sqnr_db, top1

if TYPE_CHECKING:
    from cvmc.runtime.frontend.graph import Graph
    from cvmc.runtime.model import Model

__all__ = ["DEFAULT_MAX_MEMORY", "METHODS", "Progress", "Quantized", "quantize"]

# progress(stage, total, unit) -> step: called as each long stage starts; step(n) as n of its total are done
Progress = Callable[[str, int, str], Callable[[int], None]]

log = logging.getLogger(__name__)

REPORT_SAMPLES = 64  # calibration inputs the per-layer SQNR is measured on


@dataclass(repr=False)
class Quantized:
    """A quantized model: its verified CVM graph, the scales to feed and read it, and the report."""

    graph: Graph
    input_name: str
    input_shape: tuple[int, ...]
    input_scale: float
    input_precision: int
    output_scales: list[float]
    outputs: list[dict[str, Any]]
    method: str
    report: Report
    per_channel: bool = False

    def __repr__(self) -> str:  # the graph's weights stay out of it
        return (f"Quantized(input={self.input_name!r}, input_shape={list(self.input_shape)}, "
                f"input_scale={self.input_scale!r}, output_scales={self.output_scales!r}, method={self.method!r}, "
                f"per_channel={self.per_channel}, nodes={len(self.graph.nodes)}, gas={self.graph.gas})")

    def encode(self, x: Any) -> np.ndarray:
        """Float inputs (one, or a stack with the model's shape after the first axis) as the CVM input ints."""
        bound = rules.precision_bound(self.input_precision)
        return np.clip(np.floor(np.asarray(x, np.float64) / self.input_scale + 0.5), -bound, bound).astype(np.int32)

    def decode(self, outs: list[np.ndarray]) -> list[np.ndarray]:
        """The heads' integers as floats (x output_scales)."""
        return [np.asarray(o, np.float64) * s for o, s in zip(outs, self.output_scales)]

    def model(self, device: str = "cpu") -> Model:
        from cvmc.runtime.model import Model

        return Model.from_graph(self.graph, device)

    def facts(self) -> dict[str, Any]:
        """What quantize.json holds."""
        return {"input": self.input_name, "input_shape": list(self.input_shape), "input_scale": self.input_scale,
                "input_precision": self.input_precision, "output_scales": self.output_scales,
                "outputs": self.outputs, "calibration": self.method, "per_channel": self.per_channel,
                "gas": self.graph.gas,
                "report": self.report.as_dict()}

    def save(self, directory: str | os.PathLike[str]) -> pathlib.Path:
        """DIR/model.json and DIR/params.bin (cvm-runtime's format) and DIR/quantize.json."""
        from cvmc.runtime.frontend.graph import save_graph

        d = pathlib.Path(directory)
        save_graph(self.graph, d)
        from cvmc.runtime.frontend.files import write_file

        write_file(d / "quantize.json", json.dumps(self.facts(), indent=1) + "\n", "the quantization facts")
        return d


def _samples(name: str, what: str, x: Any, shape: tuple[int, ...], dtype_kind: str, budget: Budget) -> np.ndarray:
    """A stack of model inputs (N, *shape[1:]) as float32, N a multiple of the model's batch."""
    a, what = read_array(x, what, budget, key=name)
    if a.dtype.kind not in dtype_kind:
        raise CVMLogicError(f"{what} for input {name!r}: expected float32 values, got dtype {a.dtype}")
    if a.ndim != len(shape) or tuple(a.shape[1:]) != tuple(shape[1:]) or len(a) == 0 or len(a) % shape[0]:
        raise CVMLogicError(f"{what} for input {name!r}: expected shape (N, {', '.join(map(str, shape[1:]))}) with N "
                            f"a multiple of {shape[0]} and N > 0, got {list(a.shape)}")
    if not np.all(np.isfinite(a)):
        raise CVMLogicError(f"{what} for input {name!r}: expected finite values")
    return a.astype(np.float32)


def _no_progress(stage: str, total: int, unit: str) -> Callable[[int], None]:
    return lambda n: None


def _run_cvm(graph: Graph, x_int: np.ndarray, batch: int, device: str, max_memory: int,
             step: Callable[[int], None] | None = None) -> list[np.ndarray]:
    """The graph's heads on a stack of inputs (grouped by the model's batch), stacked back sample by sample;
    `step(1)` as each group ends."""
    from cvmc.runtime.model import Model

    m = Model.from_graph(graph, device, max_memory=max_memory)
    outs = m.run_batch(x_int.reshape(-1, batch, *x_int.shape[1:]), step)
    return [o.reshape(-1, *o.shape[2:]) for o in outs]


def quantize(model: Any, calibration: Any, *, labels: Any = None, test: Any = None, method: str = "mse",
             per_channel: bool = False, equalize: bool = True, device: str = "cpu",
             report_samples: int = REPORT_SAMPLES, max_memory: int = DEFAULT_MAX_MEMORY,
             progress: Progress | None = None) -> Quantized:
    """Quantize a float ONNX model (path, bytes or ModelProto) on calibration inputs (an array, or the path of a
    .npy, or of an .npz holding one array or one named after the model's input).

    `test` (default: the calibration inputs) are the inputs the top-1 agreement is measured on, `labels` their
    classes (then both accuracies are reported); `device` runs the CVM model for the report. `per_channel`
    gives each output channel of a Conv or Dense its own weight scale, at the price of two operators after the
    layer (a per-channel integer multiplier and a shift: CVM has no per-channel shift); the default is per-tensor
    weights, which CVM expresses with the layer alone. `equalize` rescales the channels between two layers joined
    by Relu or pooling (`equalize.equalize`: the float function unchanged, no operator added).

    Every file is read bounded (`inputs`) and every allocation the model's shapes and the inputs' count imply is
    checked against `max_memory` bytes (default 8 GiB) before it is made. Every failure is a `cvmc.CVMError`:
    CVMLogicError for a model or input the quantizer refuses (naming the node, file or input), CVMRuntimeError
    for a file that cannot be read.

    `progress(stage, total, unit)`, when given, is called as each long stage starts (calibrating, the float model
    on the test inputs, measuring the layers, the agreement check) and returns the stage's `step(n)`, called as n
    more of its `total` are done (`cvm-quantize` draws a bar per stage on a terminal: `cvmc.tools.progress`)."""
    try:
        return _quantize(model, calibration, labels, test, method, per_channel, equalize, device, report_samples,
                         max_memory, progress or _no_progress)
    except MemoryError:
        raise CVMRuntimeError(f"out of memory quantizing the model (the memory budget is {max_memory} bytes: "
                              f"max_memory, cvm-quantize --max-memory)") from None


def _quantize(model: Any, calibration: Any, labels: Any, test: Any, method: str, per_channel: bool, equalize: bool,
              device: str, report_samples: int, max_memory: int, progress: Progress) -> Quantized:
    if method not in METHODS:
        raise CVMLogicError(f"expected a calibration method in {METHODS}, got {method!r}")
    budget = Budget(max_memory)
    if isinstance(report_samples, bool) or not isinstance(report_samples, int) or report_samples < 1:
        raise CVMLogicError(f"expected 'report_samples' to be an integer >= 1, got {report_samples!r}")
    fg = onnx_graph.load(model, budget.limit)
    if equalize:
        from cvmc.runtime.quantize.equalize import equalize as equalize_pairs

        log.info("equalized %d pairs of layers", equalize_pairs(fg))
    shape = fg.input_shape
    calib_x = _samples(fg.input_name, "the calibration data", calibration, shape, "f", budget)
    test_x = calib_x if test is None else _samples(fg.input_name, "the test data", test, shape, "f", budget)
    # the constants 4 times: equalized copies, the emitter's int64 weights and its float64 rounding errors
    budget.check(4 * fg.const_bytes + calib_x.nbytes + (test_x.nbytes if test is not None else 0)
                 + fg.run_bytes(len(calib_x)) + fg.run_bytes(len(test_x)),
                 f"the float model on {len(calib_x)} calibration and {len(test_x)} test inputs")
    log.info("calibrating on %d inputs (%s)", len(calib_x), method)
    with np.errstate(all="ignore"):  # overflow is refused by name, not warned of
        calib = onnx_graph.run(fg, calib_x, progress=progress("calibrating", onnx_graph.run_steps(fg, calib_x),
                                                                "node"))
    onnx_graph.check_finite(fg, calib, "the calibration data")
    e_in = choose_shift(calib_x, 1.0, DATA_PRECISION, method, floor=-60)
    input_scale = 2.0**e_in
    # the emitter sees the float values of the model fed the input as the CVM model sees it (on its grid)
    log.info("choosing the shifts and emitting the CVM graph (input scale %r)", input_scale)
    em = emit(fg, calib, input_scale, method, per_channel)
    heads, scales, outputs = [], [], []
    float_names = []
    for name in fg.outputs:
        node = next(n for n in fg.nodes if name in n.outputs)
        heads.append(em.values[name].t)
        scales.append(em.values[name].scale)
        float_names.append(node.inputs[0] if node.op in ("Softmax", "ArgMax") else name)
        outputs.append({"name": name, "shape": list(em.values[name].t.shape),
                        "precision": em.values[name].precision,
                        "head": {"Softmax": "logits (the Softmax is left out: it keeps the order)",
                                 "ArgMax": "int8 logits; cvm-runtime's argmax postprocess gives the index"}.get(
                                     node.op, "values")})
    graph = em.b.graph(heads, postprocess=em.postprocess)
    log.info("emitted the CVM graph: %d nodes, gas %d", len(graph.nodes), graph.gas)
    for node in graph.nodes:  # every value of every input within the declared precisions fits in int32
        if node.precisions and max(node.precisions) > 32:
            raise CVMLogicError(f"node {node.name!r} ({node.op}): its values need {max(node.precisions)} bits, "
                                f"more than int32 holds")
    rep = Report(gas=graph.gas)
    # per layer: the CVM model's values against the float model's on the first calibration inputs
    layered = [lr.tensor for lr in em.layers if lr.tensor is not None and lr.op not in ("Softmax", "ArgMax")]
    tensors = list({(t.node, t.index): t for t in layered}.values())
    n_rep = max(shape[0], min(len(calib_x), report_samples) // shape[0] * shape[0])
    enc = Quantized(graph, fg.input_name, shape, input_scale, DATA_PRECISION, scales, outputs, method, rep,
                    per_channel)
    x_rep = enc.encode(calib_x[:n_rep])
    log.info("measuring the layers on %d inputs (%s)", n_rep, device)
    got = dict(zip([(t.node, t.index) for t in tensors],
                   _run_cvm(em.b.graph(tensors), x_rep, shape[0], device, budget.limit,
                            progress("measuring the layers", n_rep // shape[0], "input")))) if tensors else {}
    for lr in em.layers:
        sq = None
        if lr.tensor is not None and lr.op not in ("Softmax", "ArgMax"):
            sq = sqnr_db(calib[lr.output][:n_rep], got[(lr.tensor.node, lr.tensor.index)] * lr.scale)
        rep.layers.append(LayerReport(lr.name, lr.op, lr.shifts, lr.precision, lr.scale, sq))
    # the model: top-1 agreement and logits SQNR on the test inputs (first head)
    if test is not None:
        log.info("running the float model on %d test inputs", len(test_x))
    with np.errstate(all="ignore"):
        test_values = calib if test is None else onnx_graph.run(
            fg, test_x, progress=progress("the float model on the test inputs", onnx_graph.run_steps(fg, test_x),
                                          "node"))
    onnx_graph.check_finite(fg, test_values, "the test data")
    ref = test_values[float_names[0]]
    log.info("measuring the model on %d test inputs (%s)", len(test_x), device)
    outs = _run_cvm(graph, enc.encode(test_x), shape[0], device, budget.limit,
                    progress("agreement", len(test_x) // shape[0], "input"))
    cvm_logits = outs[0].astype(np.float64) * scales[0]
    rep.samples = len(test_x)
    rep.agreement = float(np.mean(top1(ref) == top1(cvm_logits)))
    rep.logits_sqnr_db = sqnr_db(ref, cvm_logits)
    if labels is not None:
        lab, what = read_array(labels, "the labels", budget)
        lab = lab.reshape(-1)
        if len(lab) != len(top1(ref)):
            raise CVMLogicError(f"{what}: expected {len(top1(ref))} labels (one per test prediction), got {len(lab)}")
        rep.float_accuracy = float(np.mean(top1(ref) == lab))
        rep.cvm_accuracy = float(np.mean(top1(cvm_logits) == lab))
    log.info("top-1 agreement %.2f%% on %d inputs", 100 * rep.agreement, rep.samples)
    return enc
