"""A hostile-input corpus of `cvmc.quantize` (issue 36: N1, N3, N4, N5, N6), generated at test time into a folder,
and its runner:

    python tests/runtime/quantize_hostile.py --work DIR --budget 64M --out results.json

Each case writes its files (all small: the large things are declared, not stored) and names the call and the
clean outcome expected: the error class and a pattern its message matches (naming the node, the file or the
input), or a correct result. The runner runs every case in one process with `max_memory` the budget and writes,
per case, the exception's class and message, plus the process's peak resident memory after a warm-up and at the
end (resource.getrusage): tests/runtime/test_quantize_hostile.py asserts every outcome and the peak.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40


@dataclass
class Case:
    """One input: `make(folder)` writes its files and returns quantize's keyword arguments (model, calibration,
    ...); `expect` is (class name, regex) or ("ok", checker name)."""

    name: str
    kind: str  # N1 ... N6
    make: Callable[[Path], dict[str, Any]]
    expect: tuple[str, str]
    tags: list[str] = field(default_factory=list)


def _helper():
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    return onnx, TensorProto, helper, numpy_helper


def model(nodes, inits=(), in_shape=(1, 4), out="y", opset=13, in_elem=None, outputs=None, extra_inputs=(),
          raw_inits=()) -> Any:
    """A ModelProto: `inits` a dict of arrays (integers as int64, the rest float32), `raw_inits` TensorProtos."""
    onnx, TensorProto, helper, numpy_helper = _helper()
    x = helper.make_tensor_value_info("x", in_elem or TensorProto.FLOAT, list(in_shape) if in_shape is not None
                                      else None)
    names = outputs if outputs is not None else [out]
    ys = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in names]
    tensors = []
    for k, v in dict(inits).items():
        v = np.asarray(v)
        tensors.append(numpy_helper.from_array(v.astype(np.int64) if v.dtype.kind in "iu" else v.astype(np.float32),
                                               k))
    g = helper.make_graph(nodes, "g", [x, *extra_inputs], ys, tensors + list(raw_inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] if opset is not None else [])


def node(op, ins, outs, name=None, **attrs):
    return _helper()[2].make_node(op, ins, outs, name=name or f"{op.lower()}", **attrs)


def calib(shape=(1, 4), n=16, seed=0):
    return np.random.default_rng(seed).normal(size=(n, *shape[1:])).astype(np.float32)


def raw_tensor(name: str, dtype: int, dims, raw: bytes | None = None) -> Any:
    """A TensorProto as a file may hold it: dims and data unchecked."""
    t = _helper()[1]()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    return t


def _write(folder: Path, name: str, data: bytes) -> str:
    p = folder / name
    p.write_bytes(data)
    return str(p)


def _fifo(folder: Path, name: str) -> str:
    p = folder / name
    os.mkfifo(p)
    return str(p)


def _npy(folder: Path, name: str, a: np.ndarray) -> str:
    p = folder / name
    np.save(p, a)
    return str(p)


def _relu(in_shape=(1, 4)):
    return model([node("Relu", ["x"], ["y"], "r")], in_shape=in_shape)


def _ok_model(folder: Path) -> str:
    return _write(folder, "ok.onnx", _relu().SerializeToString())


def _external_model(loc: str, *, offset=None, length=None, w=None, data_type=1, dims=(4, 4)) -> Any:
    """x (1, 4) times an initializer 'w' whose data is stored outside the model at `loc`."""
    onnx, TensorProto, helper, _ = _helper()
    t = TensorProto()
    t.name, t.data_type = "w", data_type
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", loc), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return model([node("MatMul", ["x", "w"], ["y"], "mm")], raw_inits=[t])


W_HONEST = np.arange(16, dtype=np.float32).reshape(4, 4) / 8 - 1


def _n1_cases() -> list[Case]:
    cases = []

    def honest(folder: Path) -> dict[str, Any]:
        (folder / "m").mkdir()
        (folder / "m" / "w.bin").write_bytes(W_HONEST.tobytes())
        (folder / "w.bin").write_bytes(np.full(16, 1e3, np.float32).tobytes())  # a decoy where the caller runs
        path = _write(folder / "m", "model.onnx", _external_model("w.bin").SerializeToString())
        return {"model": path, "calibration": calib(), "chdir": str(folder)}

    cases.append(Case("external data beside the model, run from another folder", "N1", honest, ("ok", "honest")))

    def decoy(folder: Path) -> dict[str, Any]:
        (folder / "m").mkdir()
        (folder / "notes.bin").write_bytes(np.full(16, 7.0, np.float32).tobytes())  # in the working directory only
        path = _write(folder / "m", "model.onnx", _external_model("notes.bin").SerializeToString())
        return {"model": path, "calibration": calib(), "chdir": str(folder)}

    cases.append(Case("a relative location the caller's folder holds, the model's does not", "N1", decoy,
                      ("CVMRuntimeError", r"cannot read the external data of initializer 'w' .*m/notes.bin")))
    for label, as_what in (("bytes", "bytes"), ("ModelProto", "proto")):
        def as_bytes(folder: Path, as_what=as_what) -> dict[str, Any]:
            (folder / "w.bin").write_bytes(W_HONEST.tobytes())
            m = _external_model("w.bin")
            return {"model": m.SerializeToString() if as_what == "bytes" else m, "calibration": calib(),
                    "chdir": str(folder)}

        cases.append(Case(f"external data in a model given as {label}", "N1", as_bytes,
                          ("CVMLogicError", r"initializer 'w': its data is stored outside the model \(location "
                                            r"'w.bin'\); the model came as bytes or a ModelProto")))
    for loc, why in (("../secret.bin", r"expected a relative path inside the model's folder"),
                     ("sub/../../secret.bin", r"expected a relative path inside"),
                     ("/etc/hostname", r"expected a relative path inside"),
                     ("/dev/zero", r"expected a relative path inside"),
                     ("", r"expected a relative path inside"),
                     (".", r"is outside the model's folder"),
                     ("w\0.bin", r"expected a relative path inside")):
        def climb(folder: Path, loc=loc) -> dict[str, Any]:
            (folder / "m").mkdir()
            (folder / "secret.bin").write_bytes(W_HONEST.tobytes())
            return {"model": _write(folder / "m", "model.onnx", _external_model(loc).SerializeToString()),
                    "calibration": calib()}

        cases.append(Case(f"external data location {loc!r}", "N1", climb,
                          ("CVMLogicError", rf"initializer 'w': the external data location .*{why}")))

    def link(folder: Path) -> dict[str, Any]:
        (folder / "m").mkdir()
        (folder / "secret.bin").write_bytes(W_HONEST.tobytes())
        os.symlink(folder / "secret.bin", folder / "m" / "w.bin")
        return {"model": _write(folder / "m", "model.onnx", _external_model("w.bin").SerializeToString()),
                "calibration": calib()}

    cases.append(Case("external data through a link", "N1", link,
                      ("CVMLogicError", r"initializer 'w': the external data location 'w.bin' passes through a link")))

    def dir_link(folder: Path) -> dict[str, Any]:
        (folder / "m").mkdir()
        (folder / "out").mkdir()
        (folder / "out" / "w.bin").write_bytes(W_HONEST.tobytes())
        os.symlink(folder / "out", folder / "m" / "d")
        return {"model": _write(folder / "m", "model.onnx", _external_model("d/w.bin").SerializeToString()),
                "calibration": calib()}

    cases.append(Case("external data through a linked folder", "N1", dir_link,
                      ("CVMLogicError", r"the external data location 'd/w.bin' passes through a link")))
    for label, kw, why in (
            ("past the file's end", {"offset": 32}, r"holds 64 bytes; the tensor needs 64 from offset 32"),
            ("a length that disagrees with the dims", {"length": 60}, r"offset 0 and length 60; its dims give 64"),
            ("a negative offset", {"offset": -4}, r"offset -4 .*from an offset >= 0"),
            ("an offset that is no number", {"offset": "0x10"}, r"expected decimal 'offset' and 'length'"),
            ("huge dims", {"dims": (1 << 20, 1 << 20)}, r"initializer 'w' needs 4398046511104 bytes, more than the "
                                                        r"memory budget")):
        def bad(folder: Path, kw=kw) -> dict[str, Any]:
            (folder / "w.bin").write_bytes(W_HONEST.tobytes())
            return {"model": _write(folder, "model.onnx", _external_model("w.bin", **kw).SerializeToString()),
                    "calibration": calib()}

        pattern = why if why.startswith("initializer") else rf"initializer 'w'.*{why}"
        cases.append(Case(f"external data: {label}", "N1", bad, ("CVMLogicError", pattern)))

    def missing(folder: Path) -> dict[str, Any]:
        return {"model": _write(folder, "model.onnx", _external_model("none.bin").SerializeToString()),
                "calibration": calib()}

    cases.append(Case("external data file missing", "N1", missing,
                      ("CVMRuntimeError", r"cannot read the external data of initializer 'w' .*none.bin")))

    def a_dir(folder: Path) -> dict[str, Any]:
        (folder / "d").mkdir()
        return {"model": _write(folder, "model.onnx", _external_model("d").SerializeToString()),
                "calibration": calib()}

    cases.append(Case("external data location is a folder", "N1", a_dir,
                      ("CVMRuntimeError", r"external data of initializer 'w' .*Is a directory")))

    def ext_fifo(folder: Path) -> dict[str, Any]:
        _fifo(folder, "w.bin")
        return {"model": _write(folder, "model.onnx", _external_model("w.bin").SerializeToString()),
                "calibration": calib()}

    cases.append(Case("external data is a FIFO", "N3", ext_fifo,
                      ("CVMRuntimeError", r"external data of initializer 'w' .*a FIFO no process wrote to")))
    return cases


def _n3_cases() -> list[Case]:
    cases = []
    for which in ("model", "calibration", "test", "labels"):
        def fifo(folder: Path, which=which) -> dict[str, Any]:
            kw: dict[str, Any] = {"model": _ok_model(folder), "calibration": calib()}
            kw[which] = _fifo(folder, f"{which}.fifo")
            return kw

        what = {"model": "the ONNX model", "calibration": "the calibration data", "test": "the test data",
                "labels": "the labels"}[which]
        cases.append(Case(f"a FIFO as the {which}", "N3", fifo,
                          ("CVMRuntimeError", rf"cannot read {what} '.*{which}.fifo': a FIFO no process wrote")))
    for which in ("model", "calibration"):
        def folder_(folder: Path, which=which) -> dict[str, Any]:
            kw: dict[str, Any] = {"model": _ok_model(folder), "calibration": calib()}
            kw[which] = str(folder)
            return kw

        cases.append(Case(f"a folder as the {which}", "N3", folder_, ("CVMRuntimeError", r"Is a directory")))
    cases.append(Case("a missing model", "N3", lambda f: {"model": str(f / "none.onnx"), "calibration": calib()},
                      ("CVMRuntimeError", r"cannot read the ONNX model '.*none.onnx': No such file")))
    cases.append(Case("a missing calibration file", "N3",
                      lambda f: {"model": _ok_model(f), "calibration": str(f / "none.npy")},
                      ("CVMRuntimeError", r"cannot read the calibration data '.*none.npy': No such file")))
    cases.append(Case("a path with a NUL", "N3", lambda f: {"model": "a\0b.onnx", "calibration": calib()},
                      ("CVMLogicError", r"the path holds a NUL character")))
    return cases


def _npy_header(shape, descr="<f4", body=b"") -> bytes:
    h = repr({"descr": descr, "fortran_order": False, "shape": tuple(shape)}).encode()
    h += b" " * ((-(len(h) + 11)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + body


def _n4_cases() -> list[Case]:
    cases = []
    cases.append(Case("/dev/zero as the model", "N4", lambda f: {"model": "/dev/zero", "calibration": calib()},
                      ("CVMLogicError", r"the ONNX model '/dev/zero' holds more than \d+ bytes \(the memory budget")))
    cases.append(Case("/dev/zero as the calibration", "N4",
                      lambda f: {"model": _ok_model(f), "calibration": "/dev/zero"},
                      ("CVMLogicError", r"the calibration data '/dev/zero' holds more than \d+ bytes")))
    for n in (4096, 32768, 65536):
        def outer(folder: Path, n=n) -> dict[str, Any]:
            m = model([node("MatMul", ["a", "b"], ["ab"], "outer"), node("MatMul", ["x", "ab"], ["y"], "mm")],
                      {"a": np.ones((n, 1)), "b": np.ones((1, n))}, in_shape=(1, n))
            return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib((1, n), 2)}

        cases.append(Case(f"an ({n},1) by (1,{n}) constant folded", "N4", outer,
                          ("CVMLogicError", r"node 'outer' \(MatMul\): folding its constant operands needs \d+ bytes, "
                                            r"more than the memory budget")))
    for shape in ((1, 1, 131072, 131072), (1 << 40, 4), (1, 1 << 62)):
        def declared(folder: Path, shape=shape) -> dict[str, Any]:
            return {"model": _write(folder, "m.onnx", _relu(shape).SerializeToString()), "calibration": calib()}

        cases.append(Case(f"a declared input of shape {shape}", "N4", declared,
                          ("CVMLogicError", r"input 'x' of shape .* needs \d+ bytes, more than the memory budget")))

    def big_conv(folder: Path) -> dict[str, Any]:
        w = np.random.default_rng(0).normal(size=(64, 16, 4, 4)) * 0.1  # 64 KiB of weights
        m = model([node("Conv", ["x", "w"], ["y"], "conv", pads=[1, 1, 1, 1])], {"w": w}, in_shape=(1, 16, 1024, 1024))
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib((1, 4), 1)}

    cases.append(Case("a 64 KiB conv weight over a 1024x1024 input", "N4", big_conv,
                      ("CVMLogicError", r"node 'conv' \(Conv\): the float model's values up to it .* needs \d+ bytes")))

    def wide_concat(folder: Path) -> dict[str, Any]:
        nodes, prev = [], "x"
        for i in range(24):
            nodes.append(node("Concat", [prev, prev], [f"c{i}"], f"cat{i}", axis=1))
            prev = f"c{i}"
        nodes.append(node("Relu", [prev], ["y"], "r"))
        return {"model": _write(folder, "m.onnx", model(nodes).SerializeToString()), "calibration": calib()}

    cases.append(Case("24 Concats doubling the width", "N4", wide_concat,
                      ("CVMLogicError", r"node 'cat\d+' \(Concat\): the float model's values up to it")))

    def many_rows(folder: Path) -> dict[str, Any]:
        m = model([node("Concat", ["x"] * 64, ["c"], "cat", axis=1), node("Relu", ["c"], ["y"], "r")],
                  in_shape=(1, 1024))
        return {"model": _write(folder, "m.onnx", m.SerializeToString()),
                "calibration": _npy(folder, "c.npy", np.zeros((2048, 1024), np.float32))}

    cases.append(Case("calibration rows past the budget of the float model's values", "N4", many_rows,
                      ("CVMLogicError", r"the float model on 2048 calibration and 2048 test inputs needs \d+ bytes")))
    for shape, descr in (((1 << 44, 12), "<f4"), ((1 << 20, 1 << 20), "<f8"), ((1 << 62, 4), "<f4")):
        def header(folder: Path, shape=shape, descr=descr) -> dict[str, Any]:
            return {"model": _ok_model(folder), "calibration": _write(folder, "c.npy", _npy_header(shape, descr))}

        cases.append(Case(f"a .npy header claiming {shape} {descr}", "N4", header,
                          ("CVMLogicError", r"the calibration data '.*c.npy' needs \d+ bytes, more than the memory")))

    def raw_dims(folder: Path) -> dict[str, Any]:
        onnx, TensorProto, helper, _ = _helper()
        t = raw_tensor("w", TensorProto.FLOAT, [1 << 31, 1 << 31], b"\0" * 16)
        return {"model": _write(folder, "m.onnx", model([node("MatMul", ["x", "w"], ["y"], "mm")],
                                                        raw_inits=[t]).SerializeToString()), "calibration": calib()}

    cases.append(Case("an initializer declaring 2^62 values with 16 bytes", "N4", raw_dims,
                      ("CVMLogicError", r"initializer 'w' needs \d+ bytes, more than the memory budget")))

    def const_node(folder: Path) -> dict[str, Any]:
        onnx, TensorProto, helper, _ = _helper()
        t = raw_tensor("v", TensorProto.FLOAT, [1 << 20, 1 << 20], b"")
        m = model([node("Constant", [], ["c"], "k", value=t), node("Add", ["x", "c"], ["y"], "add")])
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

    cases.append(Case("a Constant node declaring 2^40 values", "N4", const_node,
                      ("CVMLogicError", r"node 'k' \(Constant\): its value needs \d+ bytes, more than the memory")))

    def npz_bomb(folder: Path) -> dict[str, Any]:
        p = folder / "c.npz"
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z, z.open("x.npy", "w") as member:
            member.write(_npy_header((1 << 25, 4)))
            for _ in range(128):  # written a MiB at a time: the runner's peak is the reader's, not this
                member.write(bytes(MiB))
        return {"model": _ok_model(folder), "calibration": str(p)}

    cases.append(Case("an .npz member of 128 MiB compressed to a few KiB", "N4", npz_bomb,
                      ("CVMLogicError", r"the calibration data '.*c.npz' \(key 'x'\) needs \d+ bytes, more than")))
    return cases


def _n5_cases() -> list[Case]:
    cases = []
    for i, which in ((1, "min"), (2, "max")):
        def clip(folder: Path, i=i) -> dict[str, Any]:
            ins = ["x", "", ""]
            ins[i] = "bound"
            m = model([node("Relu", ["x"], ["bound"], "r"), node("Clip", ins, ["y"], "clip")])
            return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

        cases.append(Case(f"Clip with a computed {which}", "N5", clip,
                          ("CVMLogicError", rf"node 'clip' \(Clip\): the {which} input 'bound' is computed from the "
                                            rf"model's input")))

    def clip_vector(folder: Path) -> dict[str, Any]:
        m = model([node("Clip", ["x", "lo"], ["y"], "clip")], {"lo": np.zeros(4)})
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

    cases.append(Case("Clip with a vector min", "N5", clip_vector,
                      ("CVMLogicError", r"node 'clip' \(Clip\): the min input 'lo' of shape \[4\]: the ONNX spec gives "
                                        r"a scalar")))

    def clip_nan(folder: Path) -> dict[str, Any]:
        m = model([node("Clip", ["x", "lo"], ["y"], "clip")], {"lo": np.array(np.nan)})
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

    cases.append(Case("Clip with a NaN min", "N5", clip_nan, ("CVMLogicError", r"node 'clip' \(Clip\): the min input")))
    for axis in (-99, -5, 5, 99):
        def flatten(folder: Path, axis=axis) -> dict[str, Any]:
            m = model([node("Flatten", ["x"], ["y"], "flat", axis=axis)], in_shape=(1, 2, 2, 2))
            return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib((1, 2, 2, 2))}

        cases.append(Case(f"Flatten axis={axis}", "N5", flatten,
                          ("CVMLogicError", rf"node 'flat' \(Flatten\): attribute 'axis' is {axis}: the ONNX spec "
                                            rf"allows an axis in \[-r, r\] \(rank 4\)")))
    for axis in (0, -4, 4):
        def flatten_batch(folder: Path, axis=axis) -> dict[str, Any]:
            m = model([node("Flatten", ["x"], ["y"], "flat", axis=axis)], in_shape=(1, 2, 2, 2))
            return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib((1, 2, 2, 2))}

        cases.append(Case(f"Flatten axis={axis} (the batch axis moved)", "N5", flatten_batch,
                          ("CVMLogicError", r"node 'flat' \(Flatten\): axis .* it moves the batch axis")))
    for op, axis in (("Softmax", 2), ("Softmax", -3), ("ArgMax", 2), ("ArgMax", -3)):
        def head(folder: Path, op=op, axis=axis) -> dict[str, Any]:
            m = model([node(op, ["x"], ["y"], "head", axis=axis)])
            return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

        cases.append(Case(f"{op} axis={axis}", "N5", head,
                          ("CVMLogicError", rf"node 'head' \({op}\): attribute 'axis' is {axis}: the ONNX spec allows "
                                            rf"an axis in \[-r, r-1\]")))
    for op, attrs, pattern in (
            ("Gemm", {"transA": 1}, r"attribute 'transA' is 1: the quantizer implements one of \[0\]"),
            ("ArgMax", {"select_last_index": 1, "axis": 1}, r"attribute 'select_last_index' is 1: the quantizer "),
            ("LeakyRelu", {"alpha": 1.5}, r"attribute 'alpha' is 1.5: the quantizer implements a slope in \(0, 1\)"),
            ("LeakyRelu", {"alpha": 0.0}, r"attribute 'alpha' is 0.0: the quantizer implements a slope"),
            ("Gemm", {"alpha": float("inf")}, r"attribute 'alpha' is inf: the quantizer implements a finite number")):
        def implemented(folder: Path, op=op, attrs=attrs) -> dict[str, Any]:
            ins, inits = (["x", "w"], {"w": np.ones((4, 4))}) if op == "Gemm" else (["x"], {})
            m = model([node(op, ins, ["y"], "n", **attrs)], inits)
            return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

        cases.append(Case(f"{op} {attrs}", "N5", implemented, ("CVMLogicError", rf"node 'n' \({op}\): {pattern}")))

    def gemm_c(folder: Path) -> dict[str, Any]:
        m = model([node("Gemm", ["x", "w", "c"], ["y"], "n")], {"w": np.ones((4, 3)), "c": np.ones((2, 3))},
                  in_shape=(2, 4))
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib((2, 4))}

    cases.append(Case("Gemm with a C that varies by row", "N5", gemm_c,
                      ("CVMLogicError", r"node 'n' \(Gemm\): C of shape \[2, 3\]: the quantizer implements a bias")))

    def bn_dense(folder: Path) -> dict[str, Any]:
        rng = np.random.default_rng(1)
        m = model([node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], "bn")],
                  {"g": rng.uniform(0.5, 2, 4), "b": rng.normal(size=4), "m": rng.normal(size=4),
                   "v": rng.uniform(0.5, 2, 4)})
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

    cases.append(Case("BatchNormalization of 2-D data (its Mul and Add per channel, not over the batch)", "N5",
                      bn_dense, ("ok", "bn_dense")))

    def dropout_training(folder: Path) -> dict[str, Any]:
        m = model([node("Dropout", ["x", "", "t"], ["y"], "drop")], {"t": np.array(True)})
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

    cases.append(Case("Dropout in training mode", "N5", dropout_training,
                      ("CVMLogicError", r"node 'drop' \(Dropout\): training_mode true")))

    def const_reshape(folder: Path) -> dict[str, Any]:  # a weight reshaped to (1, 4): the batch rule is not for it
        m = model([node("Reshape", ["b", "s"], ["b2"], "rs"), node("Add", ["x", "b2"], ["y"], "add")],
                  {"b": np.arange(4.0), "s": np.array([1, 4])})
        return {"model": _write(folder, "m.onnx", m.SerializeToString()), "calibration": calib()}

    cases.append(Case("a constant reshaped to the model's batch size", "N5", const_reshape, ("ok", "const_reshape")))
    return cases


def _n6_models() -> list[tuple[str, Callable[[], Any], str, str]]:
    """(name, model maker, class, pattern) of models the importer refuses."""
    onnx, TensorProto, helper, numpy_helper = _helper()
    w44 = {"w": np.ones((4, 4))}

    def conv(**attrs):
        return lambda: model([node("Conv", ["x", "w"], ["y"], "conv", **attrs)],
                             {"w": np.ones((2, 2, 3, 3))}, in_shape=(1, 2, 6, 6))

    def pool(op, **attrs):
        return lambda: model([node(op, ["x"], ["y"], "pool", **attrs)], in_shape=(1, 2, 6, 6))

    def string_init():
        t = helper.make_tensor("s", TensorProto.STRING, [1], [b"a"])
        return model([node("Add", ["x", "s"], ["y"], "add")], raw_inits=[t])

    def disagree(values, dims):
        def make():
            t = raw_tensor("w", TensorProto.FLOAT, dims)
            t.float_data.extend(values)
            return model([node("MatMul", ["x", "w"], ["y"], "mm")], raw_inits=[t])
        return make

    def typed(dtype):
        def make():
            t = TensorProto()
            t.name, t.data_type = "w", dtype
            t.dims.extend([4, 4])
            return model([node("MatMul", ["x", "w"], ["y"], "mm")], raw_inits=[t])
        return make

    def bad_attr_type():
        n = node("Conv", ["x", "w"], ["y"], "conv")
        n.attribute.append(helper.make_attribute("group", 1.5))
        return model([n], {"w": np.ones((2, 2, 3, 3))}, in_shape=(1, 2, 6, 6))

    def custom_domain():
        n = node("Relu", ["x"], ["y"], "r")
        n.domain = "com.example"
        return model([n])

    L = "CVMLogicError"
    return [
        ("a cycle", lambda: model([node("Relu", ["b"], ["a"], "r1"), node("Relu", ["a"], ["b"], "r2"),
                                   node("Relu", ["a"], ["y"], "r3")]), L,
         r"node 'r1' \(Relu\): reads 'b', which no earlier node, initializer or input makes \(the nodes must be in "
         r"topological order, without cycles\)"),
        ("a self loop", lambda: model([node("Add", ["x", "y"], ["y"], "add")]), L, r"node 'add' \(Add\): reads 'y'"),
        ("an output no node makes", lambda: model([node("Relu", ["x"], ["r"], "r")], out="nothing"), L,
         r"output 'nothing' is made by no node"),
        ("the input as the output", lambda: model([node("Relu", ["x"], ["r"], "r")], out="x"), L,
         r"output 'x' is the input itself"),
        ("a constant as the output", lambda: model([node("Relu", ["w"], ["y"], "r")], w44), L,
         r"output 'y' is a constant"),
        ("two nodes writing one value", lambda: model([node("Relu", ["x"], ["y"], "r1"),
                                                       node("Relu", ["x"], ["y"], "r2")]), L,
         r"node 'r2' \(Relu\): writes 'y', which is already defined"),
        ("a node writing the input", lambda: model([node("Relu", ["x"], ["x"], "r"), node("Relu", ["x"], ["y"], "r2")]),
         L, r"node 'r' \(Relu\): writes 'x'"),
        ("no output", lambda: model([node("Relu", ["x"], ["y"], "r")], outputs=[]), L, r"the model has no output"),
        ("an output named twice", lambda: model([node("Relu", ["x"], ["y"], "r")], outputs=["y", "y"]), L,
         r"output 'y' is named twice"),
        ("group=0", conv(group=0), L, r"node 'conv' \(Conv\): attribute 'group' is 0: the ONNX spec allows an "
                                      r"integer >= 1"),
        ("group=3 on 2 channels", conv(group=3), L, r"node 'conv' \(Conv\): weight of shape \[2, 2, 3, 3\] with "
                                                    r"group 3 on 2 input channels"),
        ("stride 0", conv(strides=[0, 1]), L, r"attribute 'strides' is \[0, 1\]: the ONNX spec allows r - 2 "
                                              r"integers >= 1 \(rank 4\)"),
        ("strides of 3 axes", conv(strides=[1, 1, 1]), L, r"attribute 'strides' is \[1, 1, 1\]"),
        ("dilation 0", conv(dilations=[0, 1]), L, r"attribute 'dilations' is \[0, 1\]"),
        ("negative pads", conv(pads=[-1, 0, -1, 0]), L, r"attribute 'pads' is \[-1, 0, -1, 0\]: the ONNX spec"),
        ("asymmetric pads", conv(pads=[1, 0, 0, 0]), L, r"attribute 'pads' is \[1, 0, 0, 0\]: the quantizer "
                                                        r"implements \[h, w, h, w\]"),
        ("kernel_shape that disagrees with the weight", conv(kernel_shape=[2, 2]), L,
         r"kernel_shape \[2, 2\] disagrees with the weight's shape \[2, 2, 3, 3\]"),
        ("auto_pad SAME_UPPER", conv(auto_pad="SAME_UPPER"), L, r"attribute 'auto_pad' is 'SAME_UPPER': the "
                                                                r"quantizer implements one of \['NOTSET'\]"),
        ("auto_pad BOGUS", conv(auto_pad="BOGUS"), L, r"attribute 'auto_pad' is 'BOGUS': the ONNX spec allows"),
        ("a window larger than the input", conv(dilations=[4, 4]), L,
         r"node 'conv' \(Conv\): the window 9 on axis 0 is larger than the padded input 6"),
        ("a float group", bad_attr_type, L, r"attribute 'group': expected INT, got an attribute of type FLOAT"),
        ("an unknown attribute", lambda: model([node("Relu", ["x"], ["y"], "r", bogus=1)]), L,
         r"node 'r' \(Relu\): attribute 'bogus' is not an attribute of Relu at opset 13"),
        ("allowzero at opset 13", lambda: model([node("Reshape", ["x", "s"], ["y"], "rs", allowzero=1)],
                                                {"s": np.array([1, 4])}), L,
         r"attribute 'allowzero' is not an attribute of Reshape at opset 13"),
        ("a computed Conv weight", lambda: model([node("Relu", ["x"], ["w"], "r"),
                                                  node("Conv", ["x", "w"], ["y"], "conv")], in_shape=(1, 1, 4, 4)), L,
         r"node 'conv' \(Conv\): the weight 'w' is computed from the model's input"),
        ("a 3-D Conv input", lambda: model([node("Conv", ["x", "w"], ["y"], "conv")], {"w": np.ones((2, 2, 3))},
                                           in_shape=(1, 2, 6)), L,
         r"node 'conv' \(Conv\): (the input of shape \[1, 2, 6\]: expected rank 4|attribute)"),
        ("a Conv bias of the wrong shape", lambda: model([node("Conv", ["x", "w", "b"], ["y"], "conv")],
                                                         {"w": np.ones((2, 2, 3, 3)), "b": np.ones(3)},
                                                         in_shape=(1, 2, 6, 6)), L,
         r"node 'conv' \(Conv\): bias of shape \[3\]: expected \[2\]"),
        ("a Conv with 4 inputs", lambda: model([node("Conv", ["x", "w", "b", "b"], ["y"], "conv")],
                                               {"w": np.ones((2, 2, 3, 3)), "b": np.ones(2)}, in_shape=(1, 2, 6, 6)),
         L, r"node 'conv' \(Conv\): 4 inputs .* the ONNX spec gives Conv 2 to 3"),
        ("a Relu without input", lambda: model([node("Relu", [], ["y"], "r")]), L,
         r"node 'r' \(Relu\): 0 inputs \[\]: the ONNX spec gives Relu 1"),
        ("ceil_mode 2", pool("MaxPool", kernel_shape=[2, 2], ceil_mode=2), L, r"attribute 'ceil_mode' is 2"),
        ("storage_order 2", pool("MaxPool", kernel_shape=[2, 2], storage_order=2), L,
         r"attribute 'storage_order' is 2"),
        ("a pool without kernel_shape", pool("MaxPool"), L,
         r"node 'pool' \(MaxPool\): attribute 'kernel_shape' is required by the ONNX spec, and missing"),
        ("a pool kernel of 0", pool("MaxPool", kernel_shape=[0, 2]), L, r"attribute 'kernel_shape' is \[0, 2\]"),
        ("a dilated MaxPool", pool("MaxPool", kernel_shape=[2, 2], dilations=[2, 2]), L,
         r"attribute 'dilations' is \[2, 2\]: the quantizer implements all 1"),
        ("a MaxPool window in the padding alone", pool("MaxPool", kernel_shape=[2, 2], pads=[2, 2, 2, 2]), L,
         r"node 'pool' \(MaxPool\): a window on axis 0 lies in the padding alone"),
        ("a ceil MaxPool window in the padding alone", pool("MaxPool", kernel_shape=[1, 1], strides=[4, 4],
                                                            ceil_mode=1), L, r"lies in the padding alone"),
        ("a pool kernel larger than the input", pool("AveragePool", kernel_shape=[7, 7]), L,
         r"node 'pool' \(AveragePool\): the window 7 on axis 0 is larger than the padded input 6"),
        ("AveragePool ceil_mode", pool("AveragePool", kernel_shape=[2, 2], ceil_mode=1), L,
         r"attribute 'ceil_mode' is 1: the quantizer implements one of \[0\]"),
        ("MaxPool's Indices read", lambda: model([node("MaxPool", ["x"], ["p", "i"], "pool", kernel_shape=[2, 2]),
                                                  node("Add", ["p", "i"], ["y"], "add")], in_shape=(1, 2, 6, 6)), L,
         r"node 'add' \(Add\): reads 'i', output 1 of node 'pool' \(MaxPool\), which the quantizer does not make"),
        ("MaxPool's Indices as the output", lambda: model([node("MaxPool", ["x"], ["p", "y"], "pool",
                                                                kernel_shape=[2, 2])], in_shape=(1, 2, 6, 6)), L,
         r"output 'y': output 1 of node 'pool' \(MaxPool\), which the quantizer does not make"),
        ("a bad perm", lambda: model([node("Transpose", ["x"], ["y"], "t", perm=[0, 0])]), L,
         r"node 't' \(Transpose\): attribute 'perm' is \[0, 0\]: the ONNX spec allows a permutation"),
        ("a perm of the wrong length", lambda: model([node("Transpose", ["x"], ["y"], "t", perm=[0, 1, 2])]), L,
         r"attribute 'perm' is \[0, 1, 2\]"),
        ("a perm moving the batch", lambda: model([node("Transpose", ["x"], ["y"], "t", perm=[1, 0])]), L,
         r"node 't' \(Transpose\): perm \[1, 0\] moves the batch axis"),
        ("the default perm (reversed) moving the batch", lambda: model([node("Transpose", ["x"], ["y"], "t")]), L,
         r"perm \[1, 0\] moves the batch axis"),
        ("Concat axis 2 of a 2-D value", lambda: model([node("Concat", ["x", "x"], ["y"], "cat", axis=2)]), L,
         r"node 'cat' \(Concat\): attribute 'axis' is 2: the ONNX spec allows an axis in \[-r, r-1\]"),
        ("Concat along the batch", lambda: model([node("Concat", ["x", "x"], ["y"], "cat", axis=0)]), L,
         r"node 'cat' \(Concat\): axis 0 is the batch axis"),
        ("Concat without an axis", lambda: model([node("Concat", ["x", "x"], ["y"], "cat")]), L,
         r"attribute 'axis' is required"),
        ("Concat of unequal shapes", lambda: model([node("Relu", ["x"], ["r"], "r"),
                                                    node("Flatten", ["r"], ["f"], "f"),
                                                    node("Concat", ["x", "w"], ["y"], "cat", axis=1)],
                                                   {"w": np.ones((2, 4))}), L, r"node 'cat' \(Concat\): shapes"),
        ("a string initializer", string_init, L, r"initializer 's': a tensor of strings has no CVM form"),
        ("dims that disagree with the data", disagree([1.0] * 15, [4, 4]), L,
         r"initializer 'w': dims \[4, 4\] give 16 values, its float_data holds 15"),
        ("raw data that disagrees with the dims", lambda: model([node("MatMul", ["x", "w"], ["y"], "mm")], raw_inits=[
            raw_tensor("w", TensorProto.FLOAT, [4, 4], b"\0" * 60)]), L,
         r"initializer 'w': dims \[4, 4\] of FLOAT give 64 bytes, its data holds 60"),
        ("negative dims", disagree([], [-1, 4]), L, r"initializer 'w': dims \[-1, 4\]: expected sizes >= 0"),
        ("a bfloat16 initializer", typed(TensorProto.BFLOAT16), L,
         r"initializer 'w': the element type BFLOAT16 has no CVM form"),
        ("a complex initializer", typed(TensorProto.COMPLEX64), L, r"the element type COMPLEX64 has no CVM form"),
        ("an initializer of an unknown type", typed(99), L, r"the element type 99 has no CVM form"),
        ("a Reshape to a float shape", lambda: model([node("Reshape", ["x", "s"], ["y"], "rs")], raw_inits=[
            numpy_helper.from_array(np.array([1.0, 4.0], np.float32), "s")]), L,
         r"node 'rs' \(Reshape\): the shape input 's': expected a 1-D int64 tensor"),
        ("a Reshape with two -1", lambda: model([node("Reshape", ["x", "s"], ["y"], "rs")],
                                                {"s": np.array([-1, -1])}), L,
         r"node 'rs' \(Reshape\): shape \[-1, -1\]: the ONNX spec allows"),
        ("a Reshape to 5 values", lambda: model([node("Reshape", ["x", "s"], ["y"], "rs")],
                                                {"s": np.array([1, 5])}), L,
         r"node 'rs' \(Reshape\): shape \[1, 5\] holds 5 values, the input \[1, 4\] 4"),
        ("a Reshape moving the batch", lambda: model([node("Reshape", ["x", "s"], ["y"], "rs")],
                                                     {"s": np.array([2, 2])}), L,
         r"node 'rs' \(Reshape\): shape \[2, 2\] of \[1, 4\]: it moves the batch axis"),
        ("a Reshape by a computed shape", lambda: model([node("Reshape", ["x", "x"], ["y"], "rs")]), L,
         r"the shape input 'x' is computed from the model's input"),
        ("a 0 past the input's axes", lambda: model([node("Reshape", ["x", "s"], ["y"], "rs")],
                                                    {"s": np.array([1, 4, 0])}), L,
         r"shape \[1, 4, 0\]: a 0 copies an input axis"),
        ("MatMul of mismatched sizes", lambda: model([node("MatMul", ["x", "w"], ["y"], "mm")],
                                                     {"w": np.ones((3, 4))}), L,
         r"node 'mm' \(MatMul\): \[1, 4\] times \[3, 4\]: the inner sizes 4 and 3 differ"),
        ("shapes that do not broadcast", lambda: model([node("Add", ["x", "w"], ["y"], "add")],
                                                       {"w": np.ones(3)}), L,
         r"node 'add' \(Add\): shapes \[1, 4\] and \[3\] do not broadcast"),
        ("a broadcast widening the batch", lambda: model([node("Add", ["x", "w"], ["y"], "add")],
                                                         {"w": np.ones((3, 4))}), L,
         r"broadcasting \[1, 4\] with \[3, 4\] gives \[3, 4\]: it moves or widens the batch axis"),
        ("BatchNormalization with a negative variance", lambda: model(
            [node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], "bn")],
            {"g": np.ones(4), "b": np.ones(4), "m": np.ones(4), "v": -np.ones(4)}), L,
         r"node 'bn' \(BatchNormalization\): var \+ epsilon is .* expected > 0"),
        ("BatchNormalization in training mode", lambda: model(
            [node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], "bn", training_mode=1)],
            {"g": np.ones(4), "b": np.ones(4), "m": np.ones(4), "v": np.ones(4)}, opset=14), L,
         r"attribute 'training_mode' is 1: the quantizer implements one of \[0\]"),
        ("BatchNormalization with a scale of 3 channels", lambda: model(
            [node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], "bn")],
            {"g": np.ones(3), "b": np.ones(4), "m": np.ones(4), "v": np.ones(4)}), L,
         r"the scale input 'g' of shape \[3\]: expected \[4\]"),
        ("a NaN weight", lambda: model([node("MatMul", ["x", "w"], ["y"], "mm")], {"w": np.full((4, 4), np.nan)}), L,
         r"node 'mm' \(Dense\): the constant .* holds values that are not finite"),
        ("an infinite bias", lambda: model([node("Gemm", ["x", "w", "b"], ["y"], "fc")],
                                           {"w": np.ones((4, 4)), "b": np.full(4, np.inf)}), L,
         r"node 'fc' \(Dense\): the constant .* holds values that are not finite"),
        ("a bias of 1e30", lambda: model([node("Gemm", ["x", "w", "b"], ["y"], "fc", transB=1)],
                                         {"w": np.ones((4, 4)), "b": np.full(4, 1e30)}), L,
         r"node 'fc' \(Dense\): the int32 accumulation of the layer can overflow"),
        ("an unsupported operator", lambda: model([node("Sigmoid", ["x"], ["y"], "s")]), L,
         r"node 's' \(Sigmoid\): the operator has no CVM form"),
        ("a custom domain", custom_domain, L, r"node 'r' \(Relu\): the operator has no CVM form"),
        ("Constant value_float", lambda: model([node("Constant", [], ["c"], "k", value_float=1.0),
                                                node("Add", ["x", "c"], ["y"], "add")]), L,
         r"node 'k' \(Constant\): attribute 'value_float' is 1.0: the quantizer implements no value of it"),
        ("Softmax inside the model", lambda: model([node("Softmax", ["x"], ["s"], "sm"), node("Relu", ["s"], ["y"],
                                                                                              "r")]), L,
         r"node 'sm' \(Softmax\): CVM offers Softmax only as the model's output"),
        ("ArgMax along the batch", lambda: model([node("ArgMax", ["x"], ["y"], "am")]), L,
         r"node 'am' \(ArgMax\): axis 0 is the batch axis: the quantizer implements ArgMax along a later one"),
        ("ArgMax along the batch, its shape unchanged, into a Concat", lambda: model(
            [node("ArgMax", ["x"], ["a"], "am"), node("Concat", ["x", "a"], ["y"], "cat", axis=1)]), L,
         r"node 'am' \(ArgMax\): axis 0 is the batch axis"),
        ("ArgMax's indices read by a MaxPool", lambda: model(
            [node("ArgMax", ["x"], ["a"], "am", axis=1), node("MaxPool", ["a"], ["y"], "mp", kernel_shape=[1, 1])],
            in_shape=(1, 2, 3, 3)), L,
         r"node 'mp' \(MaxPool\): reads 'a', the indices node 'am' \(ArgMax\) makes: the quantizer gives ArgMax a "
         r"CVM form only as the model's output"),
        ("Softmax along the batch", lambda: model([node("Softmax", ["x"], ["y"], "sm", axis=-2)]), L,
         r"node 'sm' \(Softmax\): axis -2 is the batch axis"),
        ("opset 12", lambda: model([node("Relu", ["x"], ["y"], "r")], opset=12), L,
         r"the model uses ONNX opset 12; the quantizer reads opset 13 and later"),
        ("opset 999", lambda: model([node("Relu", ["x"], ["y"], "r")], opset=999), L, r"opset 999"),
        ("no opset", lambda: model([node("Relu", ["x"], ["y"], "r")], opset=None), L, r"opset 0"),
        ("two inputs", lambda: model([node("Add", ["x", "z"], ["y"], "add")], extra_inputs=[
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])]), L,
         r"expected a model with one input, got 2: \['x', 'z'\]"),
        ("an int input", lambda: model([node("Relu", ["x"], ["y"], "r")], in_elem=TensorProto.INT32), L,
         r"input 'x': expected a float32 input, got ONNX type INT32"),
        ("an input without a shape", lambda: model([node("Relu", ["x"], ["y"], "r")], in_shape=None), L,
         r"input 'x': the model gives it no shape"),
        ("a scalar input", lambda: model([node("Relu", ["x"], ["y"], "r")], in_shape=()), L,
         r"input 'x': a scalar input has no batch axis"),
        ("an input dimension of 0", lambda: model([node("Relu", ["x"], ["y"], "r")], in_shape=(1, 0)), L,
         r"input 'x': dimension 1 is 0: expected a size >= 1"),
        ("a duplicate initializer", lambda: model([node("MatMul", ["x", "w"], ["y"], "mm")], raw_inits=[
            numpy_helper.from_array(np.ones((4, 4), np.float32), "w")] * 2), L, r"initializer 'w': named twice"),
        ("a sparse initializer", lambda: _sparse(), L, r"a sparse initializer is not read"),
    ]


def _sparse():
    onnx, TensorProto, helper, numpy_helper = _helper()
    m = model([node("MatMul", ["x", "w"], ["y"], "mm")])
    sp = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, np.float32), "w"),
                                   numpy_helper.from_array(np.zeros(1, np.int64), "i"), [4, 4])
    m.graph.sparse_initializer.append(sp)
    return m


def _n6_cases() -> list[Case]:
    cases = []
    for name, make, cls, pattern in _n6_models():
        def write(folder: Path, make=make) -> dict[str, Any]:
            m = make()
            shape = tuple(d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim) or (1, 4)
            return {"model": _write(folder, "m.onnx", m.SerializeToString()),
                    "calibration": calib(shape if all(shape) else (1, 4))}

        cases.append(Case(name, "N6", write, (cls, pattern)))
    for label, data, cls, pattern in (
            ("random bytes as the model", b"\xff\xfe\x00garbage" * 9, "CVMRuntimeError",
             r"cannot read the ONNX model '.*m.onnx': not an ONNX ModelProto"),
            ("an empty model file", b"", "CVMLogicError", r"the model uses ONNX opset 0"),
            ("a truncated model", None, "CVMRuntimeError", r"cannot read the ONNX model .*: not an ONNX ModelProto")):
        def raw(folder: Path, data=data) -> dict[str, Any]:
            body = data if data is not None else _relu().SerializeToString()[:-7]
            return {"model": _write(folder, "m.onnx", body), "calibration": calib()}

        cases.append(Case(label, "N6", raw, (cls, pattern)))
    npys = [
        ("a truncated .npy", lambda f: _write(f, "c.npy", _npy_header((16, 4)) + b"\0" * 100), "CVMRuntimeError",
         r"cannot read the calibration data '.*c.npy': its header gives shape \[16, 4\] of dtype '<f4' \(256 bytes\), "
         r"the file holds 100 bytes after the header"),
        ("a .npy longer than its header says", lambda f: _write(f, "c.npy", _npy_header((16, 4)) + b"\0" * 300),
         "CVMRuntimeError", r"the file holds 300 bytes after the header"),
        ("an object .npy", lambda f: _write(f, "c.npy", _npy_header((2,), "|O") + b"\x80\x04N."), "CVMLogicError",
         r"the calibration data '.*c.npy': expected an array of numbers, got dtype '\|O'"),
        ("a pickled object array", lambda f: _pickled(f), "CVMLogicError", r"expected an array of numbers"),
        ("a record .npy", lambda f: _write(f, "c.npy", _npy_header((2,), [("a", "<f4")]) + b"\0" * 8),
         "CVMLogicError", r"expected an array of numbers"),
        ("a string .npy", lambda f: _npy(f, "c.npy", np.array(["ab", "cd"])), "CVMLogicError",
         r"expected an array of numbers, got dtype '<U2'"),
        ("a .npy header that is no dict", lambda f: _write(f, "c.npy", b"\x93NUMPY\x01\x00\x10\x00" + b"[1, 2]" +
                                                           b" " * 9 + b"\n"), "CVMRuntimeError",
         r"cannot read the calibration data '.*c.npy': not a .npy array"),
        ("a .npy of version 9", lambda f: _write(f, "c.npy", b"\x93NUMPY\x09\x00" + b"\0" * 60), "CVMRuntimeError",
         r"not a .npy array"),
        ("a .npy header of garbage", lambda f: _write(f, "c.npy", b"\x93NUMPY\x01\x00\xff\xff" + b"(" * 70000),
         "CVMRuntimeError", r"not a .npy array"),
        ("an empty calibration file", lambda f: _write(f, "c.npy", b""), "CVMRuntimeError",
         r"cannot read the calibration data '.*c.npy': not a .npy or .npz file"),
        ("int calibration in an .npz", lambda f: _npz(f, {"x": np.zeros((4, 4), np.int64)}), "CVMLogicError",
         r"the calibration data '.*c.npz' \(key 'x'\) for input 'x': expected float32 values, got dtype int64"),
        ("an .npz of two arrays, neither the input's", lambda f: _npz(f, {"a": np.zeros((4, 4), np.float32),
                                                                        "b": np.zeros((4, 4), np.float32)}),
         "CVMLogicError", r"the calibration data '.*c.npz': expected one array, or one named 'x', got the keys "
                          r"\['a', 'b'\]"),
        ("an .npz with no arrays", lambda f: _npz(f, {}), "CVMLogicError", r"got the keys \[\]"),
        ("a damaged .npz", lambda f: _write(f, "c.npz", b"PK\x03\x04" + b"\0" * 40), "CVMRuntimeError",
         r"cannot read the calibration data '.*c.npz': not a readable .npz archive"),
        ("NaN calibration", lambda f: _npy(f, "c.npy", np.full((4, 4), np.nan, np.float32)), "CVMLogicError",
         r"for input 'x': expected finite values"),
        ("calibration of the wrong shape", lambda f: _npy(f, "c.npy", np.zeros((4, 5), np.float32)), "CVMLogicError",
         r"the calibration data '.*c.npy' for input 'x': expected shape \(N, 4\)"),
        ("calibration of no rows", lambda f: _npy(f, "c.npy", np.zeros((0, 4), np.float32)), "CVMLogicError",
         r"N > 0, got \[0, 4\]"),
        ("a scalar calibration", lambda f: _npy(f, "c.npy", np.float32(1.0)), "CVMLogicError",
         r"expected shape \(N, 4\)"),
    ]
    for label, make, cls, pattern in npys:
        def with_calib(folder: Path, make=make) -> dict[str, Any]:
            return {"model": _ok_model(folder), "calibration": make(folder)}

        cases.append(Case(label, "N6", with_calib, (cls, pattern)))
    for label, kw, cls, pattern in (
            ("labels of the wrong count", {"labels": np.zeros(3, np.int64)}, "CVMLogicError",
             r"the labels: expected 16 labels \(one per test prediction\), got 3"),
            ("labels of strings", {"labels": np.array(["a"] * 16)}, "CVMLogicError",
             r"the labels: expected an array of numbers, got dtype '<U1'"),
            ("test data of the wrong shape", {"test": np.zeros((4, 3), np.float32)}, "CVMLogicError",
             r"the test data for input 'x': expected shape \(N, 4\)"),
            ("a ragged calibration list", {"calibration": [[1.0, 2.0], [3.0]]}, "CVMLogicError",
             r"the calibration data: expected an array of numbers"),
            ("max_memory 0", {"max_memory": 0}, "CVMLogicError",
             r"expected 'max_memory' to be a positive number of bytes, got 0"),
            ("max_memory True", {"max_memory": True}, "CVMLogicError", r"got True"),
            ("max_memory a string", {"max_memory": "1G"}, "CVMLogicError", r"got '1G'"),
            ("report_samples 0", {"report_samples": 0}, "CVMLogicError", r"'report_samples' to be an integer >= 1"),
            ("a bogus method", {"method": "bogus"}, "CVMLogicError", r"expected a calibration method"),
            ("a bogus device", {"device": "bogus"}, "CVMLogicError", r"unknown device 'bogus'"),
            ("labels of two columns", {"labels": np.zeros((16, 2))}, "CVMLogicError",
             r"the labels: expected 16 labels \(one per test prediction\), got 32"),
            ("a model of the wrong type", {"model": 3}, "CVMLogicError",
             r"expected the model as a path, bytes or an onnx.ModelProto, got int")):
        def with_kw(folder: Path, kw=kw) -> dict[str, Any]:
            return {"model": _ok_model(folder), "calibration": calib(), **kw}

        cases.append(Case(label, "N6", with_kw, (cls, pattern)))
    return cases


def _npz(folder: Path, arrays: dict[str, np.ndarray]) -> str:
    p = folder / "c.npz"
    with zipfile.ZipFile(p, "w") as z:
        for k, v in arrays.items():
            import io

            b = io.BytesIO()
            np.save(b, v)
            z.writestr(f"{k}.npy", b.getvalue())
    return str(p)


def _pickled(folder: Path) -> str:
    p = folder / "c.npy"
    np.save(p, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    return str(p)


def cases() -> list[Case]:
    return _n1_cases() + _n3_cases() + _n4_cases() + _n5_cases() + _n6_cases()


# --- the runner -----------------------------------------------------------------------------------------------


def _right(check: str, kw: dict[str, Any], q: Any) -> str:
    """'' when the quantized model `q` computes what the case's float model does, else what differs."""
    x = np.asarray(kw["calibration"], np.float64)
    got = q.decode(q.model("reference").run_batch(q.encode(x)))[0].reshape(len(x), -1)
    if check == "honest":
        want = x @ W_HONEST.astype(np.float64)  # the weights beside the model, not the decoy's 1e3
    elif check == "bn_dense":
        return "" if q.report.logits_sqnr_db > 30 else f"SQNR {q.report.logits_sqnr_db}"
    elif check == "const_reshape":
        want = x + np.arange(4.0)
    else:
        return f"unknown check {check}"
    err = float(np.max(np.abs(got - want))) / max(float(np.max(np.abs(want))), 1e-9)
    return "" if err < 0.05 else f"relative error {err:.3g}"


def run(work: Path, budget: int, only: list[str] | None = None) -> dict[str, Any]:
    import cvmc
    from cvmc.runtime.frontend import files

    files.FIFO_WAIT_SECONDS = 0.2  # the FIFOs here have no writer: refused, not waited on
    home = os.getcwd()
    warm = work / "warm"
    warm.mkdir(parents=True)
    cvmc.quantize(_ok_model(warm), calib(), device="reference", max_memory=budget)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KiB
    results = []
    for i, c in enumerate(cases()):
        if only and c.name not in only:
            continue
        folder = work / f"case{i:03d}"
        folder.mkdir()
        kw = c.make(folder)
        call = {k: v for k, v in kw.items() if k != "chdir"}
        call.setdefault("max_memory", budget)
        call.setdefault("device", "reference")
        outcome: dict[str, Any] = {"name": c.name, "kind": c.kind, "expect": list(c.expect)}
        try:
            if "chdir" in kw:
                os.chdir(kw["chdir"])
            q = cvmc.quantize(**call)
            outcome["class"], outcome["message"] = "ok", _right(c.expect[1], call, q) if c.expect[0] == "ok" else ""
        except Exception as e:  # what the test judges: the class and the message
            outcome["class"], outcome["message"] = type(e).__name__, str(e)
        finally:
            os.chdir(home)
        outcome["maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KiB
        results.append(outcome)
    return {"baseline": base, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KiB, "budget": budget,
            "results": results}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", required=True)
    p.add_argument("--budget", type=int, default=64 * MiB)
    p.add_argument("--out", required=True)
    p.add_argument("--only", action="append")
    a = p.parse_args(argv)
    out = run(Path(a.work), a.budget, a.only)
    Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
