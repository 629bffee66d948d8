"""Coverage-guided fuzzing (atheris, libFuzzer) of what `cvmc.quantize` reads from a stranger:

    onnx         the ONNX importer (`onnx_graph.load`: the protobuf, the operator tables, shapes, folding, the
                 budget) on the input's bytes; with its first byte odd the whole quantizer after it (calibration
                 inputs drawn from the model's input shape, the report on the reference device)
    calibration  the calibration reader (.npy and .npz: `inputs.read_array`, then the checks of the samples)
    graph        the whole quantizer on graphs the input's bytes describe node by node (`graph_model`: operators
                 of the tables, operands among the values made so far, attributes in and just past the spec's
                 ranges, random weights): the emitter's paths, which mutated protobuf bytes rarely reach

    python tests/fuzz/quantize.py --target onnx --seconds 60 [--work DIR]   # `make fuzz-long`: both targets

The rule is stricter than readers.py's: every input ends in a result or in a `cvmc.CVMError` (what
`cvmc.quantize` promises), never in another exception, within a memory budget of 64 MiB. The seeds are the
models of tests/runtime/test_quantize.py and of the hostile corpus (tests/runtime/quantize_hostile.py). A crash
leaves its input in the work folder (`crash-*`) and the run fails; each one found becomes a test (see
tests/runtime/test_quantize_hostile.py).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MAX_LEN = 1 << 16
BUDGET = 64 << 20
_SCRATCH = Path(tempfile.gettempdir()) / f"cvmc-fuzz-quantize-{os.getpid()}"


def _onnx_seeds() -> list[bytes]:
    sys.path.insert(0, str(TESTS / "runtime"))
    import quantize_hostile as hostile
    from test_quantize import argmax_model, every_operator_model

    blobs = [every_operator_model()[0], argmax_model()[0], hostile._relu().SerializeToString()]
    for _, make, _, _ in hostile._n6_models():
        try:
            blobs.append(make().SerializeToString())
        except Exception:  # a model the onnx helper itself refuses to build
            continue
    return [bytes([mode]) + b for b in blobs for mode in (0, 1)]


def _calibration_seeds() -> list[bytes]:
    import numpy as np

    out = []
    for a in (np.zeros((3, 4), np.float32), np.ones((1, 4), np.float64), np.arange(8, dtype="<i8").reshape(2, 4),
              np.zeros((2, 4), ">f4"), np.asfortranarray(np.ones((4, 4), np.float32)), np.float32(1)):
        f = io.BytesIO()
        np.save(f, a)
        out.append(f.getvalue())
        z = io.BytesIO()
        with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("x.npy", f.getvalue())
        out.append(z.getvalue())
    return out


def _graph_seeds() -> list[bytes]:
    import random

    rng = random.Random(3)
    return [bytes(rng.randrange(256) for _ in range(n)) for n in (8, 16, 32, 64, 96) for _ in range(8)]


_UNARY = ["Relu", "LeakyRelu", "Clip", "Identity", "Dropout", "Flatten", "Softmax", "ArgMax", "Transpose",
          "GlobalAveragePool", "MaxPool", "AveragePool", "BatchNormalization", "Reshape"]
_WEIGHTED = ["Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Concat"]


def graph_model(data: bytes):
    """(ModelProto, calibration) of the graph `data` describes: a byte picks each choice (0 past the end)."""
    import numpy as np

    sys.path.insert(0, str(TESTS / "runtime"))
    from quantize_hostile import model, node

    pos = [0]

    def b() -> int:
        pos[0] += 1
        return data[pos[0] - 1] if pos[0] <= len(data) else 0

    def small(lo: int, hi: int) -> int:  # in [lo, hi]
        return lo + b() % (hi - lo + 1)

    rng = np.random.default_rng(b())
    shape4 = b() % 2 == 0
    in_shape = (small(1, 2), small(1, 4), small(1, 6), small(1, 6)) if shape4 else (small(1, 2), small(1, 8))
    values = [("x", in_shape)]
    nodes, inits = [], {}
    for k in range(small(1, 6)):
        name, shape = values[b() % len(values)]
        ops = _UNARY + _WEIGHTED
        op = ops[b() % len(ops)]
        out = f"v{k}"
        ins, attrs = [name], {}
        r = len(shape)
        c = shape[1] if r > 1 else 1
        if op == "LeakyRelu":
            attrs["alpha"] = [0.01, 0.5, 0.0, 1.0, -0.2, 1e-30][b() % 6]
        elif op == "Clip":
            lo, hi = sorted(float(v) for v in rng.normal(size=2) * 4)
            inits[f"lo{k}"], inits[f"hi{k}"] = np.array(lo, np.float32), np.array(hi, np.float32)
            ins += [f"lo{k}" if b() % 3 else "", f"hi{k}" if b() % 3 else ""]
        elif op in ("Flatten", "Softmax", "ArgMax", "Concat"):
            attrs["axis"] = small(-r - 1, r)
            if op == "ArgMax":
                attrs["keepdims"] = b() % 2
            if op == "Concat":
                ins = [name, values[b() % len(values)][0]]
        elif op == "Transpose":
            perm = list(range(r))
            if r > 2 and b() % 2:
                i, j = small(1, r - 1), small(1, r - 1)
                perm[i], perm[j] = perm[j], perm[i]
            attrs["perm"] = perm
        elif op in ("MaxPool", "AveragePool"):
            kk, st, pd = small(1, 3), small(1, 3), small(0, 2)
            attrs.update(kernel_shape=[kk, kk], strides=[st, st], pads=[pd] * 4, ceil_mode=b() % 2 if
                         op == "MaxPool" else 0)
            if op == "AveragePool" and pd:
                attrs["count_include_pad"] = 1
        elif op == "BatchNormalization":
            for t in "gbm":
                inits[f"{t}{k}"] = rng.normal(size=c).astype(np.float32)
            inits[f"v{k}_var"] = rng.uniform(0.1, 2, size=c).astype(np.float32)
            ins += [f"g{k}", f"b{k}", f"m{k}", f"v{k}_var"]
        elif op == "Reshape":
            total = int(np.prod(shape[1:]))
            target = [[0, -1], [shape[0], total], [-1, total], [0, 1, total], [shape[0], -1, 1]][b() % 5]
            inits[f"s{k}"] = np.array(target, np.int64)
            ins.append(f"s{k}")
        elif op == "Conv":
            g = [1, c][b() % 2]
            oc = g * small(1, 3)
            kk = small(1, 3)
            inits[f"w{k}"] = (rng.normal(size=(oc, c // g, kk, kk)) * 10.0 ** small(-3, 1)).astype(np.float32)
            ins.append(f"w{k}")
            if b() % 2:
                inits[f"b{k}"] = rng.normal(size=oc).astype(np.float32)
                ins.append(f"b{k}")
            attrs.update(group=g, strides=[small(1, 2)] * 2, pads=[small(0, 1)] * 4, dilations=[small(1, 2)] * 2)
        elif op in ("Gemm", "MatMul"):
            units = small(1, 6)
            w = (rng.normal(size=(shape[-1], units)) * 10.0 ** small(-3, 1)).astype(np.float32)
            if op == "Gemm" and b() % 2:
                attrs["transB"], w = 1, np.ascontiguousarray(w.T)
            inits[f"w{k}"] = w
            ins.append(f"w{k}")
            if op == "Gemm" and b() % 2:
                inits[f"c{k}"] = rng.normal(size=units).astype(np.float32)
                ins.append(f"c{k}")
        elif op in ("Add", "Sub", "Mul"):
            other = values[b() % len(values)]
            if b() % 2:
                cshape = [1 if b() % 2 else d for d in other[1]][1:] if b() % 2 else []
                inits[f"k{k}"] = (rng.normal(size=cshape) * 10.0 ** small(-2, 2)).astype(np.float32)
                ins.append(f"k{k}")
            else:
                ins.append(other[0])
        nodes.append(node(op, ins, [out], f"n{k}", **attrs))
        try:
            from cvmc.runtime.quantize import onnx_graph

            fg = onnx_graph.load(model(nodes, inits, in_shape=in_shape, out=out), BUDGET)
            values.append((out, fg.shapes[out]))
        except Exception:  # refused (the graph keeps the node: the quantizer refuses it cleanly, or fails)
            break
    x = rng.normal(size=(2 * in_shape[0], *in_shape[1:])).astype(np.float32) * 10.0 ** small(-2, 2)
    return model(nodes, inits, in_shape=in_shape, out=nodes[-1].output[0]), x


def _graph(data: bytes) -> None:
    from cvmc.runtime.quantize import quantize

    m, x = graph_model(data)
    quantize(m, x, device="reference", report_samples=2, max_memory=BUDGET, per_channel=bool(data[:1] and
                                                                                             data[0] & 1))


def _onnx(data: bytes) -> None:
    import numpy as np

    from cvmc.runtime.quantize import onnx_graph, quantize

    full, body = data[0] % 2 == 1, data[1:]
    fg = onnx_graph.load(body, BUDGET)
    n = int(np.prod(fg.input_shape))
    if full and n <= 1 << 12:
        x = np.random.default_rng(len(body)).normal(size=(2 * fg.input_shape[0], *fg.input_shape[1:]))
        quantize(body, x.astype(np.float32), device="reference", report_samples=2, max_memory=BUDGET)


def _calibration(data: bytes) -> None:
    from cvmc.runtime.quantize import _samples
    from cvmc.runtime.quantize.inputs import Budget

    _SCRATCH.mkdir(exist_ok=True)
    path = _SCRATCH / "calib.npy"
    path.write_bytes(data)
    _samples("x", "the calibration data", str(path), (1, 4), "f", Budget(BUDGET))


TARGETS: dict[str, tuple[Callable[[], list[bytes]], Callable[[bytes], None], list[str]]] = {
    "onnx": (_onnx_seeds, _onnx, ["cvmc.runtime.quantize"]),
    "calibration": (_calibration_seeds, _calibration, ["cvmc.runtime.quantize.inputs", "numpy.lib.format"]),
    "graph": (_graph_seeds, _graph, ["cvmc.runtime.quantize"]),
}


def one_input(target: str, data: bytes) -> None:
    """Run `target` on `data`; re-raise anything but a CVMError."""
    from cvmc.errors import CVMError

    if not data:
        return
    try:
        TARGETS[target][1](data)
    except CVMError:
        pass


def fuzz(target: str, argv: list[str]) -> None:
    """Run under atheris (the libFuzzer flags and corpus folders in `argv`)."""
    import importlib

    import atheris

    with atheris.instrument_imports(include=TARGETS[target][2]):
        for name in ("cvmc.runtime.quantize", "cvmc.runtime.quantize.inputs", "cvmc.runtime.quantize.onnx_graph",
                     "cvmc.runtime.quantize.onnx_spec", "cvmc.runtime.quantize.emit"):
            importlib.import_module(name)
    from cvmc.runtime.frontend import files

    files.FIFO_WAIT_SECONDS = 0.1
    atheris.Setup([sys.argv[0], *argv], lambda data: one_input(target, data))
    atheris.Fuzz()


def campaign(target: str, seconds: int, work: Path, extra: list[str]) -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    from libfuzzer import campaign as run

    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = [s for s in TARGETS[target][0]() if 0 < len(s) < MAX_LEN]
    for i, s in enumerate(seeds):
        (corpus / f"seed-{i}").write_bytes(s)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS / "runtime"), *sys.path])}
    return run(f"quantize {target}", __file__, [target], work, seconds, MAX_LEN, extra, env=env, seeds=len(seeds))


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    import libfuzzer

    return libfuzzer.main(__doc__, TARGETS, campaign, "quantize ", argv)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--run":
        sys.path.insert(0, str(TESTS / "runtime"))
        fuzz(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(main())
