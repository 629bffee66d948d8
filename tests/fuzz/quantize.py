"""Coverage-guided fuzzing (atheris, libFuzzer) of what `cvmc.quantize` reads from a stranger:

    onnx         the ONNX importer (`onnx_graph.load`: the protobuf, the operator tables, shapes, folding, the
                 budget) on the input's bytes; with its first byte odd the whole quantizer after it (calibration
                 inputs drawn from the model's input shape, the report on the reference device)
    calibration  the calibration reader (.npy and .npz: `inputs.read_array`, then the checks of the samples)

    python tests/fuzz/quantize.py --target onnx --seconds 60 [--work DIR]   # `make fuzz-long`: both targets

The rule is stricter than readers.py's: every input ends in a result or in a `cvmc.CVMError` (what
`cvmc.quantize` promises), never in another exception, within a memory budget of 64 MiB. The seeds are the
models of tests/runtime/test_quantize.py and of the hostile corpus (tests/runtime/quantize_hostile.py). A crash
leaves its input in the work folder (`crash-*`) and the run fails; each one found becomes a test (see
tests/runtime/test_quantize_hostile.py).
"""

from __future__ import annotations

import argparse
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
    from cvmc.runtime import files

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
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    p.add_argument("--seconds", type=int, default=60, help="how long to fuzz each target (default 60)")
    p.add_argument("--work", help="the folder of the corpora and any crash (default: a temporary one)")
    p.add_argument("--libfuzzer", nargs=argparse.REMAINDER, default=[], help="libFuzzer's flags, as they are")
    a = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from libfuzzer import have_atheris

    if not have_atheris(f"quantize {a.target}"):
        return 0
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="cvmc-fuzz-quantize-"))
    status = 0
    for target in TARGETS if a.target == "all" else [a.target]:
        status |= campaign(target, a.seconds, work / target, a.libfuzzer)
    return status


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--run":
        sys.path.insert(0, str(TESTS / "runtime"))
        fuzz(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(main())
