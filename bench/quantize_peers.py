"""cvmc's quantizer (`cvmc.quantize`) against ONNX Runtime's static quantizer, side by side on the same models,
calibration inputs and test inputs.

    python bench/quantize_peers.py [--models digits,resnet18,mobilenetv2] [--size 64] [--calib 64] [--test 256]

Models, each built in plain PyTorch with a fixed seed (no downloaded weights), exported to ONNX (opset 13):
- digits: the digits CNN of the digits_cnn example (its make.py), trained on scikit-learn's digits; inputs its
  train (calibration) and test images, labels the test labels;
- resnet18, mobilenetv2: the torchvision architectures written out here (1000 classes), random weights, batch
  norm statistics gathered in train mode on 256 inputs of the calibration distribution so that activations keep
  their scale through the depth (a random net's otherwise vanish or explode); inputs 1x3xSIZExSIZE, normal noise
  smoothed by a 4x4 average (image-like correlation), different seeds for calibration and test.
Each side: cvmc (per-tensor int8 weights, power-of-two requantization, 'mse' and 'minmax' calibration) and ONNX
Runtime (QDQ, u8 activations x s8 weights, per-tensor, MinMax, on the same calibration inputs). Measured against
the float model on the test inputs: top-1 agreement and the logits' SQNR; accuracy where there are labels. MRT's
published top-1 drops (cvm-runtime docs/mrt/V3_results.rst) are printed beside them.
"""

from __future__ import annotations

import argparse
import io
import math
import pathlib
import sys
import tempfile
import time
import warnings

import numpy as np

MRT = {"resnet18_v1": (70.96, 70.11), "resnet50_v1": (77.39, 76.45), "mobilenetv2_1.0": (72.05, 69.79),
       "mobilenet1_0": (70.77, 66.11), "cifar_resnet20_v1": (92.88, 92.82), "mnist": (99.00, 98.96)}


def resnet18(torch):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def mobilenetv2(torch):
    nn = torch.nn

    def cbr(cin, cout, k, s, groups=1):
        return [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout), nn.ReLU6()]

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, t):
            super().__init__()
            hid = cin * t
            body = (cbr(cin, hid, 1, 1) if t != 1 else []) + cbr(hid, hid, 3, stride, hid)
            self.body = nn.Sequential(*body, nn.Conv2d(hid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.res = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    layers = cbr(3, 32, 3, 2)
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            layers.append(Inverted(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += cbr(cin, 1280, 1, 1) + [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


def images(torch, n: int, size: int, seed: int) -> np.ndarray:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, size + 3, size + 3, generator=g)
    return (torch.nn.functional.avg_pool2d(x, 4, 1) * 2).numpy().astype(np.float32)


def export(torch, net, shape) -> bytes:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(*shape), f, dynamo=False, opset_version=13)
    return f.getvalue()


def random_model(torch, name: str, size: int, n_calib: int, n_test: int):
    torch.manual_seed(0)
    net = {"resnet18": resnet18, "mobilenetv2": mobilenetv2}[name](torch)
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None  # a cumulative average over the batches below
    net.train()
    with torch.no_grad():
        stats = torch.tensor(images(torch, 256, size, 7))
        for i in range(0, 256, 32):
            net(stats[i:i + 32])
    net.eval()
    return export(torch, net, (1, 3, size, size)), images(torch, n_calib, size, 1), images(torch, n_test, size, 2), \
        None


def ort_side(blob: bytes, calib: np.ndarray, test: np.ndarray) -> np.ndarray:
    """The test logits of ONNX Runtime's static quantization (QDQ, u8 x s8, per-tensor, MinMax) of the model."""
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    with tempfile.TemporaryDirectory() as d:
        fp32, int8 = pathlib.Path(d) / "f.onnx", pathlib.Path(d) / "q.onnx"
        fp32.write_bytes(blob)
        name = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"]).get_inputs()[0].name

        class Reader(CalibrationDataReader):
            def __init__(self) -> None:
                self.it = iter(calib)

            def get_next(self):
                x = next(self.it, None)
                return None if x is None else {name: x[None]}

        quantize_static(str(fp32), str(int8), Reader(), quant_format=QuantFormat.QDQ, per_channel=False,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        s = ort.InferenceSession(str(int8), opts, providers=["CPUExecutionProvider"])
        return np.concatenate([s.run(None, {name: x[None]})[0] for x in test])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="digits,resnet18,mobilenetv2")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--calib", type=int, default=64)
    p.add_argument("--test", type=int, default=256)
    p.add_argument("--device", default="cpu", help="the device cvmc's quantized model runs on for the report")
    a = p.parse_args(argv)
    import torch

    from cvmc.runtime.quantize import onnx_graph, quantize
    from cvmc.runtime.quantize.report import sqnr_db, top1

    torch.set_num_threads(1)
    rows = []
    for name in a.models.split(","):
        t0 = time.perf_counter()
        if name == "digits":
            import cvmc.examples

            make = cvmc.examples.digits_cnn().script_module()
            x, y = make.digits()
            blob, calib, test, labels = make.to_onnx(make.train()), x[:256], x[make.TRAIN:], y[make.TRAIN:]
        else:
            blob, calib, test, labels = random_model(torch, name, a.size, a.calib, a.test)
        fg = onnx_graph.load(blob)
        ref = onnx_graph.run(fg, test)[fg.outputs[0]]
        build = time.perf_counter() - t0
        for method, per_channel, eq in (("mse", False, True), ("mse", False, False), ("minmax", False, True),
                                        ("mse", True, True)):
            t0 = time.perf_counter()
            q = quantize(blob, calib, test=test, labels=labels, method=method, device=a.device, report_samples=16,
                         per_channel=per_channel, equalize=eq)
            r = q.report
            label = f"cvmc {method}{' per-channel' if per_channel else ''}{'' if eq else ' no-equalize'}"
            acc = None if labels is None else 100 * r.cvm_accuracy
            rows.append((name, label, 100 * r.agreement, r.logits_sqnr_db, acc, time.perf_counter() - t0, r.gas))
            if method == "mse" and not per_channel and eq:
                print(f"# {name} (built in {build:.1f} s), cvmc mse:\n{r.text()}\n", flush=True)
        t0 = time.perf_counter()
        got = ort_side(blob, calib, test)
        acc = None if labels is None else 100 * float(np.mean(top1(got) == labels))
        rows.append((name, "onnxruntime QDQ u8/s8 MinMax", 100 * float(np.mean(top1(got) == top1(ref))),
                     sqnr_db(ref, got), acc, time.perf_counter() - t0, None))
        if labels is not None:
            rows.append((name, "float", 100.0, math.inf, 100 * float(np.mean(top1(ref) == labels)), 0.0, None))
    print(f"{'model':<12} {'quantizer':<30} {'top-1 agree %':>13} {'logits SQNR dB':>14} {'accuracy %':>10} "
          f"{'time s':>7} {'gas':>12}")
    for m, q, agree, sq, acc, t, gas in rows:
        print(f"{m:<12} {q:<30} {agree:>13.2f} {sq:>14.2f} {'' if acc is None else f'{acc:.2f}':>10} {t:>7.1f} "
              f"{'' if gas is None else gas:>12}")
    print("\nMRT (cvm-runtime docs/mrt/V3_results.rst), top-1 float -> quantized (drop):")
    for k, (f, qv) in MRT.items():
        print(f"  {k:<18} {f:.2f} -> {qv:.2f} ({qv - f:+.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
