"""A model as a folder: `model.json`, `params.bin` and, when present, `quantize.json` (what `cvm-quantize -o DIR`
writes), and the float door that `quantize.json` opens.

    graph, params, scales = model_files("net/")          # the three paths (scales None without quantize.json)
    q = read_quantization("net/quantize.json", input_shape=(1, 3, 32, 32), input_precision=8, heads=1)
    ints = q.encode(x)                                   # floats -> the CVM input's integers
    floats = q.decode(model.run(ints))                   # each head's integers x its output scale

`quantize.json` is read as untrusted input (bounded, every field checked against the model it sits beside): a
file that is not JSON is a CVMRuntimeError, a field of the wrong type or value a CVMLogicError naming the file,
the field, the value found and the one expected. `encode` and `decode` compute what `Quantized.encode` and
`Quantized.decode` (cvmc.quantize) compute, bit for bit.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from cvmc.dialects.cvm_rules import precision_bound
from cvmc.errors import CVMLogicError, CVMRuntimeError

__all__ = ["GRAPH_FILE", "PARAMS_FILE", "QUANTIZE_FILE", "Quantization", "model_files", "read_quantization"]

GRAPH_FILE, PARAMS_FILE, QUANTIZE_FILE = "model.json", "params.bin", "quantize.json"
MAX_QUANTIZE_BYTES = 64 << 20  # quantize.json holds scales and a report: a few KB for a ResNet


def is_folder(path: object) -> bool:
    return isinstance(path, str | os.PathLike) and not isinstance(path, bytes) and os.path.isdir(path)


def model_files(folder: str | os.PathLike[str]) -> tuple[str, str, str | None]:
    """The graph, params and (None when absent) quantize.json paths of a model folder; a folder without the two
    model files is a CVMRuntimeError naming what it holds."""
    d = os.fspath(folder)
    graph, params, scales = (os.path.join(d, f) for f in (GRAPH_FILE, PARAMS_FILE, QUANTIZE_FILE))
    missing = [f for f, p in ((GRAPH_FILE, graph), (PARAMS_FILE, params)) if not os.path.isfile(p)]
    if missing:
        try:
            held = sorted(os.listdir(d))[:8]
        except OSError:
            held = []
        raise CVMRuntimeError(f"model folder {d!r}: expected {GRAPH_FILE} and {PARAMS_FILE} in it, "
                              f"{' and '.join(missing)} missing (it holds {held or 'nothing'})")
    return graph, params, scales if os.path.isfile(scales) else None


@dataclass(frozen=True)
class Quantization:
    """The scales of a quantized model (`quantize.json`): the CVM input is `clip(round(x / input_scale))` to
    `input_precision` bits, head h's floats are its integers x `output_scales[h]`."""

    input_scale: float
    input_precision: int
    output_scales: tuple[float, ...]
    calibration: str | None = None
    per_channel: bool = False
    path: str | None = None

    def encode(self, x: Any) -> np.ndarray:
        """Floats (one input, or a stack) as the CVM input's integers, as `Quantized.encode`."""
        bound = precision_bound(self.input_precision)
        return np.clip(np.floor(np.asarray(x, np.float64) / self.input_scale + 0.5), -bound, bound).astype(np.int32)

    def decode(self, outs: list[np.ndarray]) -> list[np.ndarray]:
        """Each head's integers as floats (x its output scale), as `Quantized.decode`."""
        return [np.asarray(o, np.float64) * s for o, s in zip(outs, self.output_scales, strict=True)]

    def facts(self) -> dict[str, object]:
        return {"input_scale": self.input_scale, "input_precision": self.input_precision,
                "output_scales": list(self.output_scales), "calibration": self.calibration,
                "per_channel": self.per_channel}

    def __str__(self) -> str:
        how = f", {self.calibration}" if self.calibration else ""
        return (f"input_scale={self.input_scale!r} (int{self.input_precision}), "
                f"output_scales={list(self.output_scales)}{how}{', per channel' if self.per_channel else ''}")


def _scale(where: str, field: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise CVMLogicError(f"{where}: expected {field!r} to be a finite positive number, got {v!r}")
    return float(v)


def quantization_from(facts: object, where: str, input_shape: tuple[int, ...] | None, input_precision: int | None,
                      heads: int) -> Quantization:
    """The scales of `facts` (quantize.json's object), checked against the model they sit beside."""
    if not isinstance(facts, dict):
        raise CVMLogicError(f"{where}: expected a JSON object, got {type(facts).__name__}")
    for field in ("input_scale", "input_precision", "output_scales"):
        if field not in facts:
            raise CVMLogicError(f"{where}: expected the field {field!r} (cvm-quantize writes it), found "
                                f"{sorted(facts)[:8]}")
    input_scale = _scale(where, "input_scale", facts["input_scale"])
    precision = facts["input_precision"]
    if input_precision is None:
        raise CVMLogicError(f"{where}: the model has no input, so it takes no input_scale")
    if isinstance(precision, bool) or precision != input_precision:
        raise CVMLogicError(f"{where}: 'input_precision' is {precision!r}, but the model's input precision is "
                            f"{input_precision}")
    shape = facts.get("input_shape")
    if shape is not None and (not isinstance(shape, list) or tuple(shape) != tuple(input_shape or ())):
        raise CVMLogicError(f"{where}: 'input_shape' is {shape!r}, but the model's input shape is "
                            f"{list(input_shape or ())}")
    scales = facts["output_scales"]
    if not isinstance(scales, list) or len(scales) != heads:
        n = len(scales) if isinstance(scales, list) else type(scales).__name__
        raise CVMLogicError(f"{where}: expected 'output_scales' to list {heads} scale(s), one per head, got {n}")
    out = tuple(_scale(where, f"output_scales[{i}]", s) for i, s in enumerate(scales))
    calibration = facts.get("calibration")
    per_channel = facts.get("per_channel", False)
    return Quantization(input_scale, int(precision), out, calibration if isinstance(calibration, str) else None,
                        per_channel is True, where)


def read_quantization(path: str | os.PathLike[str], input_shape: tuple[int, ...] | None,
                      input_precision: int | None, heads: int) -> Quantization:
    """quantize.json at `path`, read (bounded) and checked against the model's input and heads."""
    from cvmc.runtime.frontend.files import read_text

    where = os.fspath(path)
    text = read_text(path, "quantize file", MAX_QUANTIZE_BYTES)
    try:
        facts = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CVMRuntimeError(f"cannot read quantize file {where!r}: not JSON ({e})") from None
    return quantization_from(facts, where, input_shape, input_precision, heads)


def swapped(graph: object, params: object) -> bool:
    """Whether two model paths were given in the wrong order: the "graph" starts as no JSON does and the "params"
    starts with `{` (the first bytes of each, read no further)."""
    if not all(isinstance(p, str | os.PathLike) and os.path.isfile(p) for p in (graph, params)):
        return False

    def first(path: object) -> bytes:
        try:
            with open(path, "rb") as f:  # type: ignore[arg-type]
                return f.read(64).lstrip()[:1]
        except OSError:
            return b""

    return first(graph) not in (b"{", b"[", b"") and first(params) == b"{"
