"""How close the CVM model is to the float one: per layer the shifts, precision and SQNR on the calibration set;
for the model top-1 agreement, accuracies where labels are given, the logits' SQNR and the gas."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    """10 log10(sum ref^2 / sum (ref - got)^2), in dB (inf where they are equal)."""
    ref = np.asarray(ref, np.float64).reshape(-1)
    got = np.asarray(got, np.float64).reshape(-1)
    noise = float(np.sum((ref - got) ** 2))
    signal = float(np.sum(ref**2))
    if noise == 0.0:
        return math.inf
    return 10.0 * math.log10(signal / noise) if signal > 0 else -math.inf


@dataclass
class LayerReport:
    name: str
    op: str
    shifts: list[int]
    precision: int
    scale: float
    sqnr_db: float | None


@dataclass
class Report:
    layers: list[LayerReport] = field(default_factory=list)
    samples: int = 0
    agreement: float | None = None
    logits_sqnr_db: float | None = None
    float_accuracy: float | None = None
    cvm_accuracy: float | None = None
    gas: int = 0

    def as_dict(self) -> dict:
        def clean(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v

        d = asdict(self)
        d["layers"] = [{k: clean(v) for k, v in lr.items()} for lr in d["layers"]]
        return {k: clean(v) if not isinstance(v, list) else v for k, v in d.items()}

    def text(self) -> str:
        lines = [f"{'layer':<36} {'op':<18} {'shifts':<10} {'prec':>4} {'SQNR dB':>8}"]
        for lr in self.layers:
            sq = "" if lr.sqnr_db is None else f"{lr.sqnr_db:8.2f}"
            shifts = ",".join(map(str, lr.shifts)) or "-"
            lines.append(f"{lr.name[-36:]:<36} {lr.op:<18} {shifts:<10} {lr.precision:>4} {sq:>8}")
        lines.append(f"gas {self.gas}")
        if self.agreement is not None:
            lines.append(f"top-1 agreement with the float model: {100 * self.agreement:.2f}% on {self.samples} inputs; "
                         f"logits SQNR {self.logits_sqnr_db:.2f} dB")
        if self.float_accuracy is not None and self.cvm_accuracy is not None:
            lines.append(f"accuracy: float {100 * self.float_accuracy:.2f}%, CVM {100 * self.cvm_accuracy:.2f}%")
        return "\n".join(lines)


def top1(logits: np.ndarray) -> np.ndarray:
    """The first largest index of each row (a head's last axis), as cvm-runtime's argmax picks it."""
    a = np.asarray(logits)
    return np.argmax(a.reshape(-1, a.shape[-1]), axis=1)
