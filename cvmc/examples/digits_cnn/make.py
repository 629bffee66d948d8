"""The script that made the digits_cnn example: a small CNN trained in PyTorch on scikit-learn's digits, exported
to ONNX and quantized by `cvmc.quantize` (the path of the README's "Build a model", From PyTorch).

    python $(cvm-examples path digits_cnn)/make.py [OUT_DIR]     # default: this script's folder

Needs the quantize extra, torch and scikit-learn (`pip install '.[quantize]' torch scikit-learn` in the cvmc
checkout, or the dev extra). Training takes a few seconds on one CPU thread (seed 0, 40 epochs of Adam); the
first 1347 digits train and calibrate (256 of them), the last 450 test. Writes model.json, params.bin and
quantize.json (the scales and the report), and test_inputs.bin / test_labels.bin: the 450 test digits as the CVM
model's int8 inputs and their labels (int32).

Reproducible bytes: torch and numpy choose their CPU kernels by the CPU's vector instructions (ATen's AVX2 or
AVX-512 code, oneDNN's, MKL's, OpenBLAS's), and each rounds sums in its own order; 40 epochs carry a last-bit
difference into other weights (unpinned, an AVX2 host and an AVX-512 host train different networks: float 96.00%
against 95.78%). Run as a script, this one pins each library to its baseline x86-64 code before importing it
(`PINS`, unless already set), which no vector unit changes: with the versions of `MADE_WITH` it writes the
bundled files byte for byte (tests/runtime/test_quantize.py checks it). Imported as a module into a process that
has already imported torch, the pins come too late: the network is then the host's.
"""

from __future__ import annotations

import io
import os
import pathlib
import platform
import sys
import warnings

# each library's baseline code (read when the library loads): ATen's unvectorized kernels, MKL's conditional
# numerical reproducibility, oneDNN below AVX, OpenBLAS's Nehalem kernels (numpy's float model in the quantizer)
PINS = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41",
        **({"OPENBLAS_CORETYPE": "Nehalem"} if platform.machine() in ("x86_64", "AMD64") else {})}
MADE_WITH = {"torch": "2.13.0", "scikit-learn": "1.9.1", "numpy": "2.4.6", "onnx": "1.22.0"}
if __name__ == "__main__":
    for _k, _v in PINS.items():
        os.environ.setdefault(_k, _v)

import numpy as np  # noqa: E402

TRAIN = 1347


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 digits as float32 images (N, 1, 8, 8), values 0..16, and their labels."""
    from sklearn.datasets import load_digits

    d = load_digits()  # a Bunch (pyright reads the return_X_y tuple overload)
    return d.images.astype(np.float32)[:, None], d.target.astype(np.int64)  # pyright: ignore[reportAttributeAccessIssue]


def train(epochs: int = 40, seed: int = 0):
    """The CNN trained on the first TRAIN digits (torch, one thread, fixed seed), in eval mode."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    x, y = digits()
    nn = torch.nn
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(128, 10))
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    xt, yt = torch.tensor(x[:TRAIN]), torch.tensor(y[:TRAIN])
    for _ in range(epochs):
        perm = torch.randperm(TRAIN)
        for i in range(0, TRAIN, 128):
            idx = perm[i:i + 128]
            opt.zero_grad()
            nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
            opt.step()
    return net.eval()


def to_onnx(net, shape=(1, 1, 8, 8)) -> bytes:
    """The model as ONNX bytes (opset 13, the TorchScript exporter: no onnxscript needed)."""
    import torch

    f = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation notice
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(*shape),), f, dynamo=False, opset_version=13)  # pyright: ignore[reportArgumentType]
    return f.getvalue()


def main(argv: list[str] | None = None) -> int:
    import cvmc

    argv = sys.argv[1:] if argv is None else argv
    out = pathlib.Path(argv[0]) if argv else pathlib.Path(__file__).resolve().parent
    x, y = digits()
    q = cvmc.quantize(to_onnx(train()), x[:256], test=x[TRAIN:], labels=y[TRAIN:])
    q.save(out)
    q.encode(x[TRAIN:]).astype(np.int8).tofile(out / "test_inputs.bin")
    y[TRAIN:].astype("<i4").tofile(out / "test_labels.bin")
    print(q.report.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
