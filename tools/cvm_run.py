"""`cvm-run`: run a cvm-runtime model on one input, as `CVMAPIInference` does.

    cvm-run model.json params.bin input.bin [-o out.bin] [--raw] [--device D] [--gas] [--stats]

`input.bin` holds the API's input bytes (int8 per element when the input precision is <= 8, else int32), or
with `--raw` plain int32 values. The output is the API's packing (or, with `--raw`, every head as int32),
written to `-o` or printed one value per line. The exit status mirrors the C API: 0 success, 1 logic error,
2 runtime error, with the message on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from cvmc.errors import CVMError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cvm-run", description="Run a CVM model on one input.")
    p.add_argument("graph", help="the graph JSON")
    p.add_argument("params", help="the params binary")
    p.add_argument("input", nargs="?", help="the input bytes (the API's layout; int32 with --raw)")
    p.add_argument("-o", "--output", help="write the output bytes here instead of printing values")
    p.add_argument("--raw", action="store_true", help="int32 input, and every head as int32 on output")
    p.add_argument("--device", default=None, help="reference, cpu (default) or cuda")
    p.add_argument("--gas", action="store_true", help="print the model's gas and exit")
    p.add_argument("--stats", action="store_true", help="print compile and run statistics on stderr")
    p.add_argument("--emit-source", metavar="DIR", help="write the generated CUDA sources to DIR (no GPU needed)")
    return p


def _run(a: argparse.Namespace) -> int:
    from cvmc.runtime.model import DEFAULT_DEVICE, load_model

    if a.emit_source:
        from cvmc.runtime.cuda import emit_sources
        from cvmc.runtime.graph import load_graph

        for path in emit_sources(load_graph(a.graph, a.params), a.emit_source):
            print(path)
        return 0
    t0 = time.perf_counter()
    model = load_model(a.graph, a.params, device=a.device or DEFAULT_DEVICE)
    t_load = time.perf_counter() - t0
    if a.gas:
        print(model.gas)
        return 0
    if a.input is None:
        raise SystemExit("cvm-run: error: an input file is needed (or --gas)")
    try:
        with open(a.input, "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"cvm-run: cannot read {a.input!r}: {e.strerror}", file=sys.stderr)
        return 2
    t1 = time.perf_counter()
    if a.raw:
        if model.input_shape is not None:
            n = int(np.prod(model.input_shape))
            if len(data) != 4 * n:
                from cvmc.errors import CVMLogicError

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
        with open(a.output, "wb") as f:
            f.write(out)
    else:
        for v in np.frombuffer(out, "i1" if width == 1 else "<i4"):
            print(int(v))
    if a.stats:
        stats = model.stats
        print(f"device {model.device}: load+compile {t_load * 1e3:.1f} ms, run {t_run * 1e3:.3f} ms, "
              f"gas {model.gas}", file=sys.stderr)
        for k, v in stats.items():
            print(f"  {k}: {v}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        return _run(a)
    except CVMError as e:
        print(f"cvm-run: {type(e).__name__}: {e}", file=sys.stderr)
        return e.status
    except Exception as e:  # ours: report as a runtime error, never a traceback
        print(f"cvm-run: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
