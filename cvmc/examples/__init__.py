"""Models installed with cvmc, to try it without a model of one's own.

    import cvmc.examples
    d = cvmc.examples.digits()          # the files' paths: d.graph, d.params, d.input, ...
    m = d.load(device="cpu")            # a loaded cvmc.Model
    x, labels = d.test_set()            # 450 test digits (int8, 450 x 64) and their labels
    lenet = cvmc.examples.lenet()       # LeNet as a Task IR graph: lenet.graph, lenet.input, lenet.expected

From a shell, `cvm-examples` lists them and `cvm-examples path digits` prints a folder:

    D=$(cvm-examples path digits); cvm-run $D/model.json $D/params.bin $D/input.bin

- digits: a quantized MLP 64-64-10 trained on scikit-learn's digits (8x8 images), a cvm-runtime model
  (model.json, params.bin) with the argmax postprocess: one digit per inference; `input.bin` is one digit as
  the API's int8 bytes, `digits_inputs.bin` 450 of them, `digits_labels.bin` their labels and
  `digits_oracle_pred.bin` cvm-runtime's predictions (int32 each).
- digits_cnn: a CNN (conv-bn-relu-maxpool, conv-relu-avgpool, dense) trained in PyTorch on the same digits and
  quantized from ONNX by `cvmc.quantize` (`make.py` beside it is the script that made it: training, export,
  quantization); `quantize.json` holds its input and output scales and the quantizer's report,
  `test_inputs.bin` the 450 test digits as int8 inputs (450 x 1 x 8 x 8) and `test_labels.bin` their labels.
- lenet: LeNet in the Task IR of a many-core chip (`lenet.task.txt`), one input frame (`i_0_0_0.dat`, int32) and
  its 10 expected logits (`o_0_0_0.dat.txt`), under the Apache License 2.0 (`LICENSE` beside them).
"""

from __future__ import annotations

import pathlib
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from cvmc.runtime.model import Model

__all__ = ["EXAMPLES", "Digits", "DigitsCnn", "Lenet", "digits", "digits_cnn", "lenet"]

HERE = pathlib.Path(__file__).resolve().parent


@dataclass(frozen=True)
class _CvmFiles:
    """A cvm-runtime model's folder and files."""

    folder: pathlib.Path
    graph: pathlib.Path
    params: pathlib.Path

    def load(self, device: str = "cpu", **kwargs: object) -> Model:
        """The model loaded by `cvmc.load_model` on `device` (other keywords go to load_model too)."""
        from cvmc.runtime.model import load_model

        return load_model(self.graph, self.params, device=device, **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Digits(_CvmFiles):
    """The digits MLP's files (a cvm-runtime model), its sample input and its test set."""

    input: pathlib.Path
    inputs: pathlib.Path
    labels: pathlib.Path
    oracle: pathlib.Path

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        """The 450 test digits (int8, shape (450, 64)) and their labels (int32)."""
        x = np.fromfile(self.inputs, dtype=np.int8).reshape(-1, 64)
        return x, np.fromfile(self.labels, dtype="<i4").astype(np.int32)

    def oracle_predictions(self) -> np.ndarray:
        """cvm-runtime's prediction for each test digit (int32)."""
        return np.fromfile(self.oracle, dtype="<i4").astype(np.int32)


@dataclass(frozen=True)
class DigitsCnn(_CvmFiles):
    """The digits CNN quantized from ONNX: its files, the facts of its quantization and its test set."""

    quantize_json: pathlib.Path
    inputs: pathlib.Path
    labels: pathlib.Path
    script: pathlib.Path

    def facts(self) -> dict:
        """quantize.json: input_scale, input_precision, output_scales, the report."""
        import json

        return json.loads(self.quantize_json.read_text())

    def script_module(self):
        """make.py, the script that made the model, as a module (its `train`, `to_onnx`, `digits`)."""
        import importlib.util

        spec = importlib.util.spec_from_file_location("cvmc_digits_cnn_make", self.script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        """The 450 test digits as the model's int8 inputs (450, 1, 8, 8) and their labels (int32)."""
        x = np.fromfile(self.inputs, dtype=np.int8).reshape(-1, 1, 8, 8)
        return x, np.fromfile(self.labels, dtype="<i4").astype(np.int32)


@dataclass(frozen=True)
class Lenet:
    """LeNet as a Task IR graph, one input frame and its expected 10 logits."""

    folder: pathlib.Path
    graph: pathlib.Path
    input: pathlib.Path
    expected_output: pathlib.Path
    license: pathlib.Path

    def expected(self) -> np.ndarray:
        """The 10 logits the graph gives on `input` (int64)."""
        return np.array([int(v) for v in self.expected_output.read_text().split()], dtype=np.int64)


def digits() -> Digits:
    """The digits MLP: paths to its files; `.load()` gives a loaded model."""
    d = HERE / "digits"
    return Digits(d, d / "model.json", d / "params.bin", d / "input.bin", d / "digits_inputs.bin",
                  d / "digits_labels.bin", d / "digits_oracle_pred.bin")


def digits_cnn() -> DigitsCnn:
    """The digits CNN quantized from ONNX: paths to its files; `.load()` gives a loaded model."""
    d = HERE / "digits_cnn"
    return DigitsCnn(d, d / "model.json", d / "params.bin", d / "quantize.json", d / "test_inputs.bin",
                     d / "test_labels.bin", d / "make.py")


def lenet() -> Lenet:
    """LeNet's Task IR graph (Apache-2.0): paths to the graph, an input frame and its expected output."""
    d = HERE / "lenet"
    return Lenet(d, d / "lenet.task.txt", d / "i_0_0_0.dat", d / "o_0_0_0.dat.txt", d / "LICENSE")


EXAMPLES = {
    "digits": (digits, "a quantized MLP 64-64-10 on 8x8 digits (cvm-runtime model.json, params.bin)"),
    "digits_cnn": (digits_cnn, "a CNN on 8x8 digits, trained in PyTorch, quantized from ONNX by cvmc.quantize"),
    "lenet": (lenet, "LeNet as a Task IR graph (lenet.task.txt), one input frame, Apache-2.0"),
}


def main(argv: list[str] | None = None) -> int:
    """`cvm-examples`: list the bundled examples, or print one's folder (`path NAME`) or files (`files NAME`)."""
    from cvmc.tools import cli

    parser = cli.ArgumentParser(prog="cvm-examples", description="The example models installed with cvmc.")
    cli.add_common_arguments(parser)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="the examples, one line each (the default)")
    for name, what in (("path", "print an example's folder"), ("files", "print an example's files, one a line")):
        p = commands.add_parser(name, help=what)
        p.add_argument("example", choices=sorted(EXAMPLES))
    a = parser.parse_args(argv)
    cli.setup_logging(a)

    def body() -> int:
        if a.command in (None, "list"):
            for name, (_, what) in EXAMPLES.items():
                print(f"{name:<10} {what}")
        elif a.command == "path":
            print(EXAMPLES[a.example][0]().folder)
        else:
            folder = EXAMPLES[a.example][0]().folder
            for f in sorted(folder.iterdir()):
                print(f)
        return 0

    return cli.run_tool("cvm-examples", body)


if __name__ == "__main__":
    sys.exit(main())
