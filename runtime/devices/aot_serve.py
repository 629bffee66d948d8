"""Models compiled ahead of time, served to Python by the C library (`cvm-aot lib`) with no compiler imported:
no xDSL, no llvmlite, no lowering; the library's own checks (the store's tags, the entry's key, the tiers' known
answers, the handle registry) decide, exactly as for a C program.

    m = cvmc.load_model("net/", store="cvm-store")           # or runtime.devices.aot_serve.load(graph, params, store)
    m.gas, m.input_bytes, m.output_bytes                      # CVMAPIGetGasFromModel, Get{Input,Output}Length
    packed = m.infer(input_bytes)                             # CVMAPIInference: the API's bytes in and out
    values = m.run(x)                                         # an integer array in, the packed values as an array
    rows = m.run_batch(xs)                                    # a stack of inputs, a row of packed values each

The library is `library=PATH`, else `$CVMC_AOT_LIB`, else one built once (`aot.write_library`, the system's cc,
a few seconds) into the compiled-code cache's folder, named by a hash of its sources. A load or an inference the
library refuses raises the class of its status (1 `CVMLogicError`, 2 `CVMRuntimeError`) with its message.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from cvmc.errors import CVMLogicError, CVMRuntimeError

__all__ = ["AotModel", "library_path", "load"]

LIBRARY_ENV = "CVMC_AOT_LIB"
_ENV_LOCK = threading.Lock()  # the library reads $CVMC_AOT_STORE at each load: one load at a time sets it
_LIBRARIES: dict[str, ctypes.CDLL] = {}


def library_path(library: str | os.PathLike[str] | None = None) -> Path:
    """The C library to serve with: the one named, `$CVMC_AOT_LIB`, or one built once into the cache folder."""
    if library is not None or os.environ.get(LIBRARY_ENV):
        path = Path(library if library is not None else os.environ[LIBRARY_ENV])
        if not path.is_file():
            raise CVMRuntimeError(f"cannot load the AOT library {str(path)!r}: no such file (cvm-aot lib -o PATH "
                                  f"writes one)")
        return path
    from cvmc.runtime.engine import cache

    here = Path(__file__).parent
    sources = hashlib.sha256()
    # what the library is built from
    for f in [*sorted((here / "capi").glob("*.[ch]")), here.parent / "engine" / "program.ll"]:
        sources.update(f.name.encode() + b"\0" + f.read_bytes())
    folder = cache.default_dir()
    if folder is None:
        raise CVMRuntimeError("no cache folder to build the AOT library into: pass library=PATH (cvm-aot lib -o "
                              "PATH writes one) or set $CVMC_AOT_LIB")
    path = folder / f"libcvm-{sources.hexdigest()[:16]}.so"
    if not path.is_file():
        from cvmc.runtime.devices import aot  # building it needs LLVM (its scheduler) and cc; serving needs neither

        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        aot.write_library(path)
    return path


def _library(path: Path) -> ctypes.CDLL:
    key = str(path.resolve())
    lib = _LIBRARIES.get(key)
    if lib is None:
        try:
            lib = ctypes.CDLL(key)
        except OSError as e:
            raise CVMRuntimeError(f"cannot load the AOT library {key!r}: {e}") from None
        ull = ctypes.POINTER(ctypes.c_ulonglong)
        lib.CVMAPILoadModel.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
        lib.CVMAPIInference.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
        lib.CVMAPIFreeModel.argtypes = [ctypes.c_void_p]
        for name in ("CVMAPIGetInputLength", "CVMAPIGetOutputLength", "CVMAPIGetInputTypeSize",
                     "CVMAPIGetOutputTypeSize", "CVMAPIGetGasFromModel", "CVMAPIGetStorageSize"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ull]
        lib.CVMGetLastError.restype = ctypes.c_char_p
        _LIBRARIES[key] = lib
    return lib


def _raise(lib: ctypes.CDLL, status: int, what: str) -> None:
    message = (lib.CVMGetLastError() or b"").decode(errors="replace").strip() or f"status {status}"
    raise (CVMLogicError if status == 1 else CVMRuntimeError)(f"{what}: {message}")


class AotModel:
    """A model served by the AOT library from a store: `infer` and `run` call `CVMAPIInference`."""

    def __init__(self, lib: ctypes.CDLL, net: ctypes.c_void_p, name: str | None, store: str):
        self._lib, self._net, self.name, self.store = lib, net, name, store
        self.input_bytes = self._query("CVMAPIGetInputLength")
        self.output_bytes = self._query("CVMAPIGetOutputLength")
        self.input_type_size = self._query("CVMAPIGetInputTypeSize")
        self.output_type_size = self._query("CVMAPIGetOutputTypeSize")
        self.gas = self._query("CVMAPIGetGasFromModel")
        self._lock = threading.Lock()

    def _query(self, name: str) -> int:
        v = ctypes.c_ulonglong(0)
        status = getattr(self._lib, name)(self._net, ctypes.byref(v))
        if status:
            _raise(self._lib, status, name)
        return int(v.value)

    def __repr__(self) -> str:
        name = "" if self.name is None else f"{self.name!r}, "
        return (f"AotModel({name}store={self.store!r}, input_bytes={self.input_bytes}, "
                f"output_bytes={self.output_bytes}, gas={self.gas})")

    def infer(self, input_bytes: bytes) -> bytes:
        """`CVMAPIInference`: the API's input bytes in, its packed output out (as `Model.infer`)."""
        if not isinstance(input_bytes, bytes | bytearray | memoryview):
            raise CVMLogicError(f"expected the input as bytes, got {type(input_bytes).__name__}")
        data = bytes(input_bytes)
        if len(data) != self.input_bytes:
            raise CVMLogicError(f"expected {self.input_bytes} input bytes, got {len(data)}")
        out = ctypes.create_string_buffer(self.output_bytes)
        with self._lock:
            if self._net is None:
                raise CVMLogicError("the model was closed")
            status = self._lib.CVMAPIInference(self._net, data, len(data), out)
        if status:
            _raise(self._lib, status, "CVMAPIInference")
        return out.raw[:self.output_bytes]

    def run(self, x: object) -> np.ndarray:
        """An integer array of the input's values (within the input type: int8 or int32) -> the packed output's
        values (int8 or int32), as `np.frombuffer(infer(...))`."""
        a = np.asarray(x)
        if a.dtype.kind not in "iu":
            raise CVMLogicError(f"expected an integer input, got dtype {a.dtype}")
        width = self.input_type_size
        n = self.input_bytes // max(width, 1)
        if a.size != n:
            raise CVMLogicError(f"expected {n} input values, got an array of shape {list(a.shape)}")
        info = np.iinfo(np.int8 if width == 1 else np.int32)
        if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
            raise CVMLogicError(f"expected input values in int{8 * width} [{info.min}, {info.max}]")
        data = a.astype("<i1" if width == 1 else "<i4").tobytes()
        return np.frombuffer(self.infer(data), "i1" if self.output_type_size == 1 else "<i4").copy()

    def run_batch(self, xs: object, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """A stack of inputs along the first axis (each of the input's values, in any shape) -> the packed outputs,
        one row each (N, output values; int8 or int32 as the API packs them); `progress(1)` as each input ends."""
        a = np.asarray(xs)
        n = self.input_bytes // max(self.input_type_size, 1)
        if a.ndim < 1 or int(np.prod(a.shape[1:])) != n:
            raise CVMLogicError(f"expected a stack of inputs of {n} values each (N, ...), got an array of shape "
                                f"{list(a.shape)}")
        width = self.output_type_size
        out = np.empty((a.shape[0], self.output_bytes // max(width, 1)), np.int8 if width == 1 else np.int32)
        for i in range(a.shape[0]):
            out[i] = self.run(a[i])
            if progress is not None:
                progress(1)
        return out

    def close(self) -> None:
        with self._lock:
            if self._net is not None:
                self._lib.CVMAPIFreeModel(self._net)
                self._net = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def load(graph_json: bytes | str | os.PathLike[str], params: bytes | str | os.PathLike[str] | None = None, *,
         store: str | os.PathLike[str], library: str | os.PathLike[str] | None = None) -> AotModel:
    """The stored entry of a model (two files, their bytes, or a folder) through the C library's CVMAPILoadModel,
    with the store `store` (as `$CVMC_AOT_STORE` for a C program)."""
    from cvmc.runtime.frontend.files import read_bounded
    from cvmc.runtime.frontend.folder import is_folder, model_files

    name = None
    if params is None:
        if not is_folder(graph_json):
            raise CVMLogicError("expected a model folder (model.json, params.bin) or two files")
        assert isinstance(graph_json, str | os.PathLike)  # is_folder holds
        name = os.fspath(graph_json)
        graph_json, params, _ = model_files(name)
    blobs = []
    for f, what in ((graph_json, "graph file"), (params, "params file")):
        if isinstance(f, bytes):
            blobs.append(f)
        else:
            name = name or (str(os.fspath(f)) if what == "graph file" else name)
            blobs.append(read_bounded(f, what, (1 << 31) - 1, "the C API's lengths are ints"))
    folder = os.fspath(store)
    if not os.path.isdir(folder):
        raise CVMRuntimeError(f"cannot open the AOT store {folder!r}: not a folder (cvm-aot build ... --store DIR "
                              f"fills one)")
    lib = _library(library_path(library))
    net = ctypes.c_void_p()
    with _ENV_LOCK:
        before = os.environ.get("CVMC_AOT_STORE")
        os.environ["CVMC_AOT_STORE"] = folder
        try:
            status = lib.CVMAPILoadModel(blobs[0], len(blobs[0]), blobs[1], len(blobs[1]), ctypes.byref(net), 0, 0)
        finally:
            if before is None:
                del os.environ["CVMC_AOT_STORE"]
            else:
                os.environ["CVMC_AOT_STORE"] = before
    if status:
        _raise(lib, status, "CVMAPILoadModel")
    return AotModel(lib, net, name, folder)
