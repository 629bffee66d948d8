"""`cvm-run`: run a cvm-runtime model on one input, as `CVMAPIInference` does.

    cvm-run model.json params.bin input.bin [-o out.bin] [--raw] [--device D] [--gas] [--stats]
            [--max-memory BYTES]

`input.bin` holds the API's input bytes (int8 per element when the input precision is <= 8, else int32), or
with `--raw` plain int32 values; no more than the model's input size is read from it (a FIFO or `/dev/zero`
is refused, never read to the end). The output is the API's packing (or, with `--raw`, every head as int32),
written to `-o` or printed one value per line. `--max-memory` refuses a model whose working memory on the
device exceeds BYTES (suffixes K, M, G: powers of 1024). The exit status mirrors the C API: 0 success, 1 logic
error, 2 runtime error, with the message on stderr; 64 for a usage error (`cli.EXIT_STATUSES`).
"""

from __future__ import annotations

import argparse
import sys
import time

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


def _parser() -> argparse.ArgumentParser:
    p = cli.ArgumentParser(prog="cvm-run", description="Run a CVM model on one input.")
    cli.add_common_arguments(p)
    p.add_argument("graph", help="the graph JSON")
    p.add_argument("params", help="the params binary")
    p.add_argument("input", nargs="?", help="the input bytes (the API's layout; int32 with --raw)")
    p.add_argument("-o", "--output", help="write the output bytes here instead of printing values")
    p.add_argument("--raw", action="store_true", help="int32 input, and every head as int32 on output")
    p.add_argument("--device", default=None, choices=["reference", "cpu", "cuda"],
                   help="reference, cpu (default) or cuda")
    p.add_argument("--gas", action="store_true", help="print the model's gas and exit")
    p.add_argument("--stats", action="store_true", help="print compile and run statistics on stderr")
    p.add_argument("--emit-source", metavar="DIR", help="write the generated CUDA sources to DIR (no GPU needed)")
    p.add_argument("--max-memory", metavar="BYTES", type=memory_size, default=None,
                   help="refuse a model needing more working memory on the device (default 2^40, the runtime's)")
    return p


def _run(a: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from cvmc.dialects.cvm_rules import MAX_MEMORY
    from cvmc.runtime.files import read_bounded
    from cvmc.runtime.model import DEFAULT_DEVICE, load_model

    if a.emit_source:
        from cvmc.runtime.cuda import emit_sources
        from cvmc.runtime.graph import load_graph

        for path in emit_sources(load_graph(a.graph, a.params), a.emit_source):
            print(path)
        return 0
    t0 = time.perf_counter()
    model = load_model(a.graph, a.params, device=a.device or DEFAULT_DEVICE, max_memory=a.max_memory or MAX_MEMORY)
    t_load = time.perf_counter() - t0
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
    if a.output:
        try:
            with open(a.output, "wb") as f:
                f.write(out)
        except (OSError, ValueError) as e:
            raise CVMRuntimeError(f"cannot write {a.output!r}: {getattr(e, 'strerror', None) or e}") from None
    else:
        values = np.frombuffer(out, "i1" if width == 1 else "<i4")
        for start in range(0, len(values), 4096):  # in chunks: a reader that stops early stops the writing
            sys.stdout.write("".join(f"{v}\n" for v in values[start:start + 4096].tolist()))
    if a.stats:
        stats = model.stats
        print(f"device {model.device}: load+compile {t_load * 1e3:.1f} ms, run {t_run * 1e3:.3f} ms, "
              f"gas {model.gas}", file=sys.stderr)
        for k, v in stats.items():
            print(f"  {k}: {v}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    a = parser.parse_args(argv)
    cli.setup_logging(a)
    return cli.run_tool("cvm-run", lambda: _run(a, parser), name_class=True)


if __name__ == "__main__":
    sys.exit(main())
