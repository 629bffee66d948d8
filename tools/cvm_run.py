"""`cvm-run`: run a cvm-runtime model on one input, as `CVMAPIInference` does.

    cvm-run model.json params.bin input.bin [-o out.bin] [--raw] [--device D] [--gas] [--stats]
            [--max-memory BYTES] [--threads N] [--dump DIR] [-v]
    cvm-run net/ x.npy [-o y.npy]          # a model folder; a .npy input (ints, or floats with quantize.json)
    cvm-run model.json params.bin --batch inputs.npy -o outputs.npy     # a stack of inputs, a progress bar
    cvm-run model.json params.bin --emit-source DIR [--device D]        # what the device compiles
    cvm-run net/ input.bin --aot-store DIR [--aot-lib libcvm.so]     # through the C API, from an AOT store

MODEL is a folder holding model.json and params.bin (and quantize.json when cvm-quantize wrote it), or the two
files. An input ending in `.npy` is an array: one input, or a stack of them (its first axis), of integers, or of
floats when the folder has quantize.json (scaled by its input_scale; the heads come back x output_scales); the
heads are written as `.npy` to `-o`, default the input's name with `.out.npy` (`.out.npz` with several heads), and
the path is printed.

`--batch` takes a .npy array whose first axis counts the inputs (each of the input's shape or size) and writes
`-o` as a .npy of the first head stacked (`outputs.npy`), or with several heads `outputs.npz` (head0, head1,
...); a progress bar shows when stderr is a terminal, and the throughput is printed on stderr at the end.

`input.bin` holds the API's input bytes (int8 per element when the input precision is <= 8, else int32), or
with `--raw` plain int32 values; no more than the model's input size is read from it (a FIFO or `/dev/zero`
is refused, never read to the end). The output is the API's packing (or, with `--raw`, every head as int32),
written to `-o` or printed one value per line. `--max-memory` refuses a model whose working memory on the
device exceeds BYTES (suffixes K, M, G: powers of 1024). The exit status mirrors the C API: 0 success, 1 logic
error, 2 runtime error, with the message on stderr; 64 for a usage error (`cli.EXIT_STATUSES`).

The quick paths: a model loaded before comes from the cache (`load_model`: no lowering, no xDSL imported). With
`--aot-store DIR` (the store of `cvm-aot build`; or `--aot-lib` / `$CVMC_AOT_LIB` and `$CVMC_AOT_STORE`) the model
runs from the store through cvm-runtime's C API, as a C program would, loaded as `cvmc.aot.load` loads it
(`cvmc.runtime.devices.aot_serve`): no compiler and no model check in Python, the library's checks decide. The
library is `--aot-lib`, else `$CVMC_AOT_LIB`, else the one built once into the cache folder. It takes one input
in the API's bytes, a .npy of integers (one input or a stack), or `--batch`; the output is the API's packing (a .npy
of one row per input for a .npy or --batch); `--gas` and `--stats` as for the model.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import time
from typing import Any

import numpy as np

from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.tools import cli

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memory_size(text: str) -> int:
    """A positive number of bytes, with an optional K, M, G or T suffix (powers of 1024)."""
    t = text.strip().upper().removesuffix("B")
    unit = _UNITS.get(t[-1:], None) if t[-1:].isalpha() else 1
    digits = t[:-1] if t[-1:].isalpha() else t
    if unit is None or not digits.isdecimal() or int(digits) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes (with K, M, G or T), got {text!r}")
    return int(digits) * unit


def _threads(text: str) -> int:
    from cvmc.runtime.devices.cpu import MAX_THREADS

    if not text.isdecimal() or not 1 <= int(text) <= MAX_THREADS:
        raise argparse.ArgumentTypeError(f"expected an integer in [1, {MAX_THREADS}], got {text!r}")
    return int(text)


def _emit_source(a: argparse.Namespace) -> int:
    """What the chosen device compiles: the LLVM IR of the kernels (cpu) or the CUDA source (cuda)."""

    from cvmc.runtime.frontend.graph import load_graph
    from cvmc.runtime.model import DEFAULT_DEVICE

    graph = load_graph(a.graph, a.params)
    device = a.device or DEFAULT_DEVICE
    if device not in ("cpu", "cuda"):
        raise cli.UsageError("the reference device compiles nothing: --emit-source takes --device cpu or cuda")
    from cvmc.runtime.driver.compile import emit_sources

    paths = emit_sources(graph, a.emit_source, device)  # as the device compiles it (cpu: for this host)
    for path in paths:
        print(path)
    return 0


def read_batch(path: str) -> np.ndarray:
    """The .npy stack of `--batch`, mapped (not read whole); any file that is not one is a CVMRuntimeError. Only a
    regular file is opened (a FIFO would hold the open for ever, and cannot be mapped)."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except OSError as e:
        raise CVMRuntimeError(f"cannot read the inputs {path!r}: {e.strerror or e}") from None
    if not regular:
        raise CVMRuntimeError(f"cannot read the inputs {path!r}: not a regular file (a .npy stack is mapped)")
    try:
        xs = np.load(path, allow_pickle=False, mmap_mode="r")
    except EOFError:
        raise CVMRuntimeError(f"cannot read the inputs {path!r}: an empty file, not a .npy array") from None
    except OSError as e:
        raise CVMRuntimeError(f"cannot read the inputs {path!r}: {e.strerror or e}") from None
    except Exception as e:  # numpy's header parser raises what its tokenizer and literal_eval raise
        raise CVMRuntimeError(f"cannot read the inputs {path!r}: not a .npy array ({type(e).__name__}: "
                              f"{e})") from None
    if xs.dtype.kind not in "biuf":  # bytes, text, records, complex or dates are no model input
        raise CVMRuntimeError(f"cannot read the inputs {path!r}: expected an array of numbers, got dtype "
                              f"{xs.dtype.str!r}")
    return xs


def write_heads(path: str, outs: list[np.ndarray]) -> str:
    """The heads to `path` exactly as named (np.save would add `.npy` to `scores.bin`): one head as .npy, several
    as an .npz of head0, head1, ...; the path written."""
    from cvmc.runtime.frontend.files import writing

    with writing(path, "the outputs") as f:  # cvmc's one writer: no link followed, put in place when complete
        if len(outs) == 1:
            np.save(f, outs[0])
        else:
            heads: dict[str, Any] = {f"head{i}": o for i, o in enumerate(outs)}
            np.savez(f, **heads)
    return path


def _npy(a: argparse.Namespace, model) -> int:
    """A .npy input: one input or a stack, integers or floats (with the model's scales); the heads as .npy."""
    from cvmc.runtime.model import accepts_shape

    x = read_batch(a.input)
    one = model.input_shape is not None and accepts_shape(tuple(x.shape), model.input_shape)
    outs = model.run(np.asarray(x)) if one else model.run_batch(np.asarray(x))
    out = a.output or (a.input.removesuffix(".npy") + (".out.npy" if len(outs) == 1 else ".out.npz"))
    print(write_heads(out, outs))
    return 0


def _batch(a: argparse.Namespace, model) -> int:
    """Every input of a .npy stack through `Model.run_batch`, with a progress bar on a terminal."""
    if not a.output:
        raise cli.UsageError("--batch needs -o OUTPUTS.npy")
    from cvmc.tools import progress

    xs = read_batch(a.batch)
    n = int(xs.shape[0]) if xs.ndim else 0
    t0 = time.perf_counter()
    with progress.bar("cvm-run --batch", n, "inputs") as step:  # drawn when stderr is a terminal
        outs = model.run_batch(xs, progress=step)
    seconds = time.perf_counter() - t0
    print(write_heads(a.output, outs))
    replicas = min(model.threads, max(n, 1)) if model.device == "cpu" else 1
    print(f"{n} input{'s' * (n != 1)} in {seconds:.3f} s: {n / seconds if seconds > 0 else 0:.0f} inputs/s on "
          f"{model.device} ({replicas} thread{'s' * (replicas != 1)})", file=sys.stderr)
    return 0


FORMATS = """formats:
  input.bin   the API's input bytes, row-major: int8 per value when the input's precision is <= 8, else int32
              little-endian; with --raw int32 little-endian always
  output      CVMAPIInference's packing, printed one value per line or written as bytes to -o: with the argmax
              postprocess one int32 class index per row of each head; else the heads concatenated, int8 values
              when every head's precision is <= 8, else int32 little-endian. With --raw every head as int32.
  --batch     INPUTS_NPY: a .npy array (N, *input shape) or (N, input size) of integers (saturated to the input's
              precision); -o OUTPUTS.npy gets the heads, not the API's packing: the one head as int32 of shape
              (N, *head shape) (for the digits MLP (N, 1, 10): take .argmax(-1) for the classes), or with
              several heads an .npz of head0, head1, ...; the throughput goes to stderr

"""


def _parser() -> argparse.ArgumentParser:
    p = cli.ArgumentParser(prog="cvm-run", description="Run a CVM model on one input.",
                           epilog=FORMATS + cli.EXIT_STATUSES)
    cli.add_common_arguments(p)
    p.add_argument("graph", metavar="MODEL", help="the model folder, or the graph JSON (then the params binary)")
    p.add_argument("params", nargs="?", help="the params binary (none after a folder)")
    p.add_argument("input", nargs="?", help="the input bytes (the API's layout; int32 with --raw), or a .npy array")
    p.add_argument("-o", "--output", help="write the output here (as named) instead of printing values")
    p.add_argument("--raw", action="store_true", help="int32 input, and every head as int32 on output")
    p.add_argument("--device", default=None, choices=["reference", "cpu", "cuda"],
                   help="reference, cpu (default) or cuda")
    p.add_argument("--gas", action="store_true", help="print the model's gas and exit")
    p.add_argument("--stats", action="store_true", help="print compile and run statistics on stderr")
    p.add_argument("--emit-source", metavar="DIR",
                   help="write what the device compiles to DIR: LLVM IR for cpu; CUDA C and launches.json for cuda "
                   "(no GPU needed)")
    p.add_argument("--dump", metavar="DIR", help="write every stage of the compilation to DIR (IR after import and "
                   "after each pass; LLVM IR before and after O3 and the assembly, or the CUDA source)")
    p.add_argument("--threads", type=_threads, default=None,
                   help="cpu threads (default: $CVMC_THREADS, else the physical cores)")
    p.add_argument("--batch", metavar="INPUTS_NPY", help="run every input of a .npy stack; -o names the .npy out")
    p.add_argument("--aot-lib", metavar="LIB", default=os.environ.get("CVMC_AOT_LIB") or None,
                   help="run through this C-API library of cvm-aot lib (default $CVMC_AOT_LIB), from the store")
    p.add_argument("--aot-store", metavar="DIR", default=None,
                   help="run the model's entry in this store of cvm-aot build through the C API (with --aot-lib: "
                   "default $CVMC_AOT_STORE)")
    p.add_argument("--max-memory", metavar="BYTES", type=memory_size, default=None,
                   help="refuse a model needing more working memory on the device (default 2^40, the runtime's)")
    return p


def _run_aot(a: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The model's entry in the AOT store of `--aot-store` served by the C-API library (`--aot-lib`, else
    `$CVMC_AOT_LIB`, else the one built once into the cache folder) through `cvmc.runtime.devices.aot_serve`, the loader
    of `cvmc.aot.load`: one input of the API's bytes, a .npy input or a `--batch` stack, or `--gas`."""
    from cvmc.runtime.devices import aot_serve
    from cvmc.runtime.frontend.files import read_bounded

    if a.raw or a.dump or a.emit_source or a.device not in (None, "cpu") or a.threads is not None \
            or a.max_memory is not None:
        raise cli.UsageError("--aot-lib and --aot-store run the stored model through the C API on the cpu: they "
                             "take none of --raw, --dump, --emit-source, --device, --threads, --max-memory")
    store = a.aot_store or os.environ.get("CVMC_AOT_STORE")
    if not store:
        raise cli.UsageError("--aot-lib needs the store of cvm-aot build: --aot-store DIR or $CVMC_AOT_STORE")
    if a.batch and not a.output:
        raise cli.UsageError("--batch needs -o OUTPUTS.npy")
    t0 = time.perf_counter()
    model = aot_serve.load(a.graph, a.params, store=store, library=a.aot_lib)
    try:
        t_load = time.perf_counter() - t0
        if a.gas:
            print(model.gas)
            return 0
        if a.batch or (a.input is not None and a.input.endswith(".npy")):
            return _aot_npy(a, model)
        if a.input is None:
            parser.error("an input file is needed (or --gas)")
        n_in = model.input_bytes
        data = read_bounded(a.input, "input", n_in, f"the model's input is {n_in} bytes")
        t1 = time.perf_counter()
        out = model.infer(data)
        t_run = time.perf_counter() - t1
        _write(a, out, model.output_type_size)
        if a.stats:
            print(f"C API ({aot_serve.library_path(a.aot_lib)}, store {store}): load {t_load * 1e3:.1f} ms, run "
                  f"{t_run * 1e3:.3f} ms, gas {model.gas}", file=sys.stderr)
        return 0
    finally:
        model.close()


def _aot_npy(a: argparse.Namespace, model) -> int:
    """A .npy input (one input or a stack) or a --batch stack through the store's entry: the API's packed output
    per input, as a .npy of rows (N, output values), or one row for one input."""
    from cvmc.tools import progress

    path = a.batch or a.input
    xs = read_batch(path)
    n_values = model.input_bytes // max(model.input_type_size, 1)
    one = not a.batch and xs.size == n_values  # the input's values in any shape: one input
    stack = np.asarray(xs).reshape(1, -1) if one else xs
    n = int(stack.shape[0]) if stack.ndim else 0
    t0 = time.perf_counter()
    with progress.bar("cvm-run --batch", n, "inputs") if a.batch else contextlib.nullcontext() as step:
        rows = model.run_batch(stack, step)
    seconds = time.perf_counter() - t0
    out = a.output or (path.removesuffix(".npy") + ".out.npy")
    print(write_heads(out, [rows[0] if one else rows]))
    if a.batch:
        print(f"{n} input{'s' * (n != 1)} in {seconds:.3f} s: {n / seconds if seconds > 0 else 0:.0f} inputs/s "
              f"through the C API (store {model.store})", file=sys.stderr)
    return 0


def _write(a: argparse.Namespace, out: bytes, width: int) -> None:
    """The output bytes to `-o` (`files.write_file`), else their values one a line (int8 or int32 little-endian by
    `width`)."""
    if a.output:
        from cvmc.runtime.frontend.files import write_file

        write_file(a.output, out, "the output")
    else:
        values = np.frombuffer(out, "i1" if width == 1 else "<i4")
        for start in range(0, len(values), 4096):  # in chunks: a reader that stops early stops the writing
            sys.stdout.write("".join(f"{v}\n" for v in values[start:start + 4096].tolist()))


def model_arguments(a: argparse.Namespace, tool: str) -> None:
    """MODEL as a folder or as two files: after a folder the next positional is the input; two files in the wrong
    order are a usage error (they would be read, and refused, as the other file)."""
    from cvmc.runtime.frontend.folder import is_folder, model_files, swapped

    if is_folder(a.graph):
        if getattr(a, "input", None) is not None:
            raise cli.UsageError(f"after the model folder {a.graph!r} one input is taken, got {a.params!r} and "
                                 f"{a.input!r}")
        a.input, a.params = a.params, None
        model_files(a.graph)  # a folder without the files is named before anything else
    elif a.params is None:
        raise cli.UsageError(f"{a.graph!r} is not a folder: name the model folder, or model.json then params.bin")
    elif swapped(a.graph, a.params):
        raise cli.UsageError(f"the files are swapped: {tool} model.json params.bin, the graph first (got "
                             f"{a.graph!r}, which is not JSON, then {a.params!r}, which is)")


def warn_threads(threads: int | None, tool: str) -> None:
    """An explicit thread count above the CPUs this process may use is taken as asked, with a warning: the extra
    threads wait for each other (figures: bench/results/2026-11-28-comment-figures.md)."""
    from cvmc.runtime.engine.threads import usable_cpus

    cpus = len(usable_cpus())
    if threads is not None and threads > cpus:
        print(f"{tool}: warning: --threads {threads} is more than the {cpus} CPU{'s' * (cpus != 1)} this process "
              f"may use: the extra threads only wait (the default takes at most {cpus})", file=sys.stderr)


def _run(a: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from cvmc.runtime.frontend.folder import model_files

    model_arguments(a, "cvm-run")
    if a.aot_lib or a.aot_store:
        return _run_aot(a, parser)
    from cvmc.dialects.cvm_rules import MAX_MEMORY
    from cvmc.runtime.frontend.files import read_bounded
    from cvmc.runtime.model import DEFAULT_DEVICE, load_model

    if a.emit_source:
        if a.params is None:
            a.graph, a.params, _ = model_files(a.graph)
        return _emit_source(a)
    warn_threads(a.threads, "cvm-run")
    t0 = time.perf_counter()
    model = load_model(a.graph, a.params, device=a.device or DEFAULT_DEVICE, max_memory=a.max_memory or MAX_MEMORY,
                       threads=a.threads, dump=a.dump)
    t_load = time.perf_counter() - t0
    if a.batch:
        return _batch(a, model)
    if a.input is not None and a.input.endswith(".npy") and not a.raw and not a.gas:
        return _npy(a, model)
    if a.gas:
        print(model.gas)
        return 0
    if a.input is None:
        parser.error("an input file is needed (or --gas)")
    n = int(np.prod(model.input_shape)) if model.input_shape is not None else 0
    size = n * (1 if not a.raw and model.input_precision is not None and model.input_precision <= 8 else 4)
    data = read_bounded(a.input, "input", size, f"the model's input is {size} bytes")
    t1 = time.perf_counter()
    if a.raw:
        if model.input_shape is not None:
            if len(data) != 4 * n:
                raise CVMLogicError(f"expected {4 * n} input bytes ({n} x int32), got {len(data)}")
            outs = model.run(np.frombuffer(data, "<i4").reshape(model.input_shape))
        else:
            outs = model.run(None)
        out = b"".join(np.ascontiguousarray(o, "<i4").tobytes() for o in outs)
        width = 4
    else:
        out = model.infer(data)
        width = 1 if model.graph.postprocess is None and max(model.output_precisions) <= 8 else 4
    t_run = time.perf_counter() - t1
    _write(a, out, width)
    if a.stats:
        stats = model.stats
        setup = "load (compiled code from the cache)" if stats.get("lowered") is False else "load+compile"
        print(f"device {model.device}: {setup} {t_load * 1e3:.1f} ms, run {t_run * 1e3:.3f} ms, gas {model.gas}",
              file=sys.stderr)
        for k, v in stats.items():
            print(f"  {k}: {v}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    a = parser.parse_args(argv)
    cli.setup_logging(a)
    return cli.run_tool("cvm-run", lambda: _run(a, parser))


if __name__ == "__main__":
    sys.exit(main())
