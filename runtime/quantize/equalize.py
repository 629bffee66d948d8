"""Cross-layer equalization (Nagel et al., "Data-Free Quantization", 2019): per-tensor int8 weights with the range
of per-channel ones, and no operator added.

Where a Conv's output reaches exactly one Conv or Dense through operators that commute with a positive
per-channel scale (Relu, MaxPool, AveragePool, GlobalAveragePool, Flatten, Identity, Dropout: f(s x) = s f(x)
for s > 0), dividing the first layer's output channel c by s_c and multiplying the second's input channel c by
s_c leaves the float model's function unchanged. s_c = sqrt(r1_c / r2_c), r1_c and r2_c the channel's largest
|weight| in either layer, gives both the range sqrt(r1_c r2_c): the channels of both layers then share one scale
far better. Relu6 and other clips do not commute with a scale and stop the chain.
"""

from __future__ import annotations

import numpy as np

from cvmc.runtime.quantize.onnx_graph import FloatGraph, Node

HOMOGENEOUS = frozenset({"Relu", "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Identity", "Dropout"})


def _only_reader(fg: FloatGraph, value: str) -> Node | None:
    if value in fg.outputs:
        return None
    readers = fg.consumers(value)
    return readers[0] if len(readers) == 1 and readers[0].inputs[0] == value else None


def _pair(fg: FloatGraph, first: Node) -> tuple[Node, list[Node]] | None:
    """The Conv or Dense that `first`'s output alone reaches through homogeneous operators, and those operators."""
    chain: list[Node] = []
    value = first.outputs[0]
    while True:
        n = _only_reader(fg, value)
        if n is None:
            return None
        if n.op in ("Conv", "Dense"):
            return n, chain
        if n.op not in HOMOGENEOUS:
            return None
        chain.append(n)
        value = n.outputs[0]


def equalize(fg: FloatGraph, rounds: int = 2) -> int:
    """Equalize every Conv -> (homogeneous operators) -> Conv/Dense pair in place; the number of pairs."""
    done = 0
    for _ in range(rounds):
        for first in [n for n in fg.nodes if n.op == "Conv"]:
            found = _pair(fg, first)
            if found is None:
                continue
            second, _ = found
            w1 = fg.consts[first.inputs[1]].astype(np.float64)
            w2 = fg.consts[second.inputs[1]].astype(np.float64)
            c1 = w1.shape[0]
            groups = second.attrs.get("group", 1) if second.op == "Conv" else 1
            if second.op == "Conv" and groups == 1 and w2.shape[1] == c1:
                view = w2.transpose(1, 0, 2, 3).reshape(c1, -1)  # (in channel, the rest)
            elif second.op == "Conv" and groups == c1 == w2.shape[0] and w2.shape[1] == 1:
                view = w2.reshape(c1, -1)  # depthwise: input channel c is output channel c
            elif second.op == "Dense" and w2.shape[1] % c1 == 0:
                view = w2.reshape(w2.shape[0], c1, -1).transpose(1, 0, 2).reshape(c1, -1)
            else:
                continue
            r1 = np.abs(w1.reshape(c1, -1)).max(axis=1)
            r2 = np.abs(view).max(axis=1)
            with np.errstate(all="ignore"):
                ratio = r1 / np.where(r2 > 0, r2, 1.0)
            ok = (r1 > 0) & (r2 > 0) & np.isfinite(ratio) & (ratio > 0)  # a ratio a float cannot hold: not moved
            s = np.ones(c1)
            s[ok] = np.sqrt(ratio[ok])
            w1 = w1 / s.reshape(-1, 1, 1, 1)
            if second.op == "Conv" and groups == 1:
                w2 = w2 * s.reshape(1, -1, 1, 1)
            elif second.op == "Conv":
                w2 = w2 * s.reshape(-1, 1, 1, 1)
            else:
                w2 = (w2.reshape(w2.shape[0], c1, -1) * s.reshape(1, -1, 1)).reshape(w2.shape)
            for node, w, tag in ((first, w1, "eq_weight"), (second, w2, "eq_weight")):
                name = f"{node.name}/{tag}"
                fg.consts[name] = w.astype(np.float32)
                node.inputs[1] = name
            if len(first.inputs) > 2 and first.inputs[2]:
                name = f"{first.name}/eq_bias"
                fg.consts[name] = (fg.consts[first.inputs[2]] / s).astype(np.float32)
                first.inputs[2] = name
            done += 1
    return done
