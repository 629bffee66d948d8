"""`cvm-quantize`: a float ONNX model to a CVM model (cvm-runtime's model.json and params.bin) by post-training
quantization on calibration inputs.

    cvm-quantize model.onnx --calibration inputs.npy -o DIR [--test test.npy] [--labels labels.npy]
                 [--method mse|minmax] [--per-channel] [--device cpu|reference] [--report report.txt] [-v]

`inputs.npy` holds float32 inputs stacked along the first axis (N, *input_shape[1:]), N a multiple of the model's
batch. DIR receives model.json, params.bin and quantize.json (the input scale and precision, one output scale
per head, the report); the report (per layer the shifts, precision and SQNR; top-1 agreement with the float model
on `--test`, or the calibration inputs; both accuracies with `--labels`; the gas) is printed on stdout.
Needs the `quantize` extra (onnx): `pip install 'cvmc[quantize]'`.
"""

from __future__ import annotations

import sys

from cvmc.tools import cli


def main(argv: list[str] | None = None) -> int:
    parser = cli.ArgumentParser(prog="cvm-quantize", description="Quantize a float ONNX model to a CVM model.")
    cli.add_common_arguments(parser)
    parser.add_argument("model", help="the float ONNX model (opset 13 and later, one input of a fixed shape)")
    parser.add_argument("--calibration", required=True, metavar="NPY", help="float32 calibration inputs (.npy)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write the model into")
    parser.add_argument("--test", metavar="NPY", help="inputs to measure top-1 agreement on (default: calibration)")
    parser.add_argument("--labels", metavar="NPY", help="the test inputs' classes: report both accuracies")
    parser.add_argument("--method", default="mse", choices=("mse", "minmax"),
                        help="how a shift is chosen (default mse: least squared error on the calibration data)")
    parser.add_argument("--per-channel", action="store_true",
                        help="a weight scale per output channel (a multiplier and a shift after each layer)")
    parser.add_argument("--device", default="cpu", help="the device the report runs the CVM model on (default cpu)")
    parser.add_argument("--report", metavar="FILE", help="also write the report to FILE")
    a = parser.parse_args(argv)
    cli.setup_logging(a)

    def body() -> int:
        try:
            import onnx  # noqa: F401
        except ImportError:
            raise cli.UsageError("cvm-quantize needs onnx: pip install 'cvmc[quantize]'") from None
        from cvmc.runtime.quantize import quantize

        q = quantize(a.model, a.calibration, test=a.test, labels=a.labels, method=a.method, device=a.device,
                     per_channel=a.per_channel)
        folder = q.save(a.output)
        text = q.report.text()
        print(text)
        print(f"input_scale {q.input_scale!r} (int{q.input_precision}), output_scales {q.output_scales}")
        print(f"wrote {folder / 'model.json'}, {folder / 'params.bin'}, {folder / 'quantize.json'}")
        if a.report:
            from cvmc.runtime.files import write_file

            write_file(a.report, text + "\n", "the report")
        return 0

    return cli.run_tool("cvm-quantize", body)


if __name__ == "__main__":
    sys.exit(main())
