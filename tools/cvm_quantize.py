"""`cvm-quantize`: a float ONNX model to a CVM model (cvm-runtime's model.json and params.bin) by post-training
quantization on calibration inputs.

    cvm-quantize model.onnx --calibration inputs.npy -o DIR [--test test.npy] [--labels labels.npy]
                 [--method mse|minmax] [--per-channel] [--device cpu|reference] [--report report.txt]
                 [--max-memory BYTES] [-v]

`inputs.npy` holds float32 inputs stacked along the first axis (N, *input_shape[1:]), N a multiple of the model's
batch (or an .npz holding that array alone, or under the model input's name).
DIR receives model.json, params.bin and quantize.json (the input scale and precision, one output scale
per head, the report); the report (per layer the shifts, precision and SQNR; top-1 agreement with the float model
on `--test`, or the calibration inputs; both accuracies with `--labels`; the gas) is printed on stdout.
Every file is read bounded (a FIFO is refused, not waited on for ever); `--max-memory` (default 8G) bounds what the
model's declared shapes and the inputs' count may make the quantizer allocate: a model or input past it is refused
before the allocation. `-v` logs each stage on stderr; when stderr is a terminal, a progress bar shows the long
ones (calibrating, the float model on the test inputs, measuring the layers, the agreement check).
Needs the `quantize` extra (onnx): `pip install '.[quantize]'` in the clone (status 2 without it).
"""

from __future__ import annotations

import sys

from cvmc.tools import cli, progress
from cvmc.tools.cvm_run import memory_size


def main(argv: list[str] | None = None) -> int:
    parser = cli.ArgumentParser(prog="cvm-quantize", description="Quantize a float ONNX model to a CVM model.")
    cli.add_common_arguments(parser)
    parser.add_argument("model", help="the float ONNX model (opset 13 and later, one input of a fixed shape)")
    parser.add_argument("--calibration", required=True, metavar="NPY",
                        help="float32 calibration inputs (.npy, or .npz: its only array or the one named as the input)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write the model into")
    parser.add_argument("--test", metavar="NPY", help="inputs to measure top-1 agreement on (default: calibration)")
    parser.add_argument("--labels", metavar="NPY", help="the test inputs' classes: report both accuracies")
    parser.add_argument("--method", default="mse", choices=("mse", "minmax"),
                        help="how a shift is chosen (default mse: least squared error on the calibration data)")
    parser.add_argument("--per-channel", action="store_true",
                        help="a weight scale per output channel (a multiplier and a shift after each layer)")
    parser.add_argument("--device", default="cpu", help="the device the report runs the CVM model on (default cpu)")
    parser.add_argument("--report", metavar="FILE", help="also write the report to FILE")
    parser.add_argument("--max-memory", metavar="BYTES", type=memory_size, default=None,
                        help="the memory the quantizer may allocate, with K, M, G or T (default 8G): checked on the "
                             "model's shapes and the inputs before allocating")
    a = parser.parse_args(argv)
    cli.setup_logging(a)

    def body() -> int:
        from cvmc.runtime.quantize import DEFAULT_MAX_MEMORY, quantize
        from cvmc.runtime.quantize.inputs import require_onnx

        require_onnx()  # a CVMRuntimeError naming what to install
        with progress.stages() as stage:  # a bar per long stage when stderr is a terminal, else nothing
            q = quantize(a.model, a.calibration, test=a.test, labels=a.labels, method=a.method, device=a.device,
                         per_channel=a.per_channel, max_memory=a.max_memory or DEFAULT_MAX_MEMORY, progress=stage)
        folder = q.save(a.output)
        text = q.report.text()
        print(text)
        print(f"input_scale {q.input_scale!r} (int{q.input_precision}), output_scales {q.output_scales}")
        print(f"wrote {folder / 'model.json'}, {folder / 'params.bin'}, {folder / 'quantize.json'}")
        if a.report:
            from cvmc.runtime.frontend.files import write_file

            write_file(a.report, text + "\n", "the report")
        return 0

    return cli.run_tool("cvm-quantize", body)


if __name__ == "__main__":
    sys.exit(main())
