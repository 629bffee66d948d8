"""`cvm-aot`: compile CVM models ahead of time for cvm-runtime's C API, and write the library that serves them.

    cvm-aot build model.json params.bin --store DIR [--target T]    # verify, compile, write the model's entry
    cvm-aot build net/ --store DIR                                   # the same from a model folder
    cvm-aot build net1/ net2/ net3/ --store DIR                      # several folders, a progress bar on a tty
    cvm-aot lib -o libcvm.so [--header c_api.h]                      # the C-API library (and its header)

`build` loads the model as `CVMAPILoadModel` does; a model the runtime accepts is compiled into a shared object
for `--target`: host (the default: this machine's CPU and kernel tier), x86-64-v3 (the avx2 kernels),
x86-64-v4 (the avx2 kernels compiled for AVX-512: VNNI is not in x86-64-v4), amx (the AMX-INT8 kernels) or all
(one object with the amx, avx512-vnni, avx2 and generic kernels: the library runs the best this CPU has, so one
store serves every x86-64 node); `--cpu NAME` (an LLVM CPU name such as `skylake-avx512`) is `--target host` for
that CPU instead of this one (the generic kernels). A model the runtime rejects is stored as its decision, so that
loading it through the library gives the runtime's status. Either way the entry is named by the hash of the two
files' bytes and the target (a store holds one entry per target), and a second entry, named by the graph's hash,
answers `CVMAPIGetGasFromGraphFile`. Each written entry is printed; with several models, a progress bar counts
them on stderr when it is a terminal. `lib` compiles the library with the system's cc; a program linked with it,
run with `CVMC_AOT_STORE=DIR`, runs the stored models without Python
(`cvmc.runtime.devices.aot` has the details).
"""

from __future__ import annotations

import argparse
import sys

from cvmc.tools import cli


def _parser() -> argparse.ArgumentParser:
    p = cli.ArgumentParser(prog="cvm-aot", description="Compile CVM models ahead of time for cvm-runtime's C API.")
    cli.add_common_arguments(p)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="verify and compile a model into a store")
    b.add_argument("models", nargs="+", metavar="MODEL",
                   help="model folders (one or more), or the graph JSON then the params binary")
    b.add_argument("--store", required=True, metavar="DIR", help="the store folder (created if missing)")
    b.add_argument("--target", default="host", metavar="T",
                   help="host (default), x86-64-v3, x86-64-v4, amx or all (a kernel set per tier, chosen at load)")
    b.add_argument("--cpu", metavar="NAME", help="with --target host: the LLVM CPU to compile for (default: this "
                   "machine's)")
    lib = sub.add_parser("lib", help="write the C-API library")
    lib.add_argument("-o", "--output", required=True, metavar="PATH", help="the shared object to write")
    lib.add_argument("--header", metavar="PATH", help="also write the API's header (c_api.h) here")
    return p


def _models(a: argparse.Namespace) -> list[tuple[str, str]]:
    """(graph, params) of each model named: folders, or two files in their order (swapped files are refused,
    never stored as a rejection)."""
    from cvmc.runtime.frontend.folder import is_folder, model_files
    from cvmc.tools.cvm_run import model_arguments

    if all(is_folder(m) for m in a.models):
        return [(str(g), str(p)) for g, p, _ in map(model_files, a.models)]
    if len(a.models) != 2 or is_folder(a.models[0]):
        raise cli.UsageError(f"expected model folders, or model.json then params.bin, got "
                             f"{', '.join(map(repr, a.models))}")
    pair = argparse.Namespace(graph=a.models[0], params=a.models[1], input=None)
    model_arguments(pair, "cvm-aot build")
    return [(pair.graph, pair.params)]


def _build(a: argparse.Namespace) -> int:
    from cvmc.runtime.devices.aot import TARGET_NAMES, build_model
    from cvmc.runtime.frontend.graph import read_source
    from cvmc.tools import progress

    models = _models(a)
    if a.cpu is not None and not a.cpu.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise cli.UsageError(f"--cpu: expected an LLVM CPU name (letters, digits, '-', '_', '.'), got {a.cpu!r}")
    if a.target not in TARGET_NAMES:
        raise cli.UsageError(f"--target: expected one of {', '.join(TARGET_NAMES)}, got {a.target!r}")
    if a.cpu is not None and a.target != "host":
        raise cli.UsageError(f"--cpu names the CPU of --target host; --target {a.target} compiles for its own CPUs")
    with progress.bar("cvm-aot build", len(models) if len(models) > 1 else 0, "models") as step:
        for graph, params in models:  # each model's entries printed as they are written
            written = build_model(read_source(graph), read_source(params), a.store, a.cpu, a.target)
            step.clear()  # the entries below the bar, not after it on its line
            for w in written:
                what = "model" if w.what == "model" else "graph (CVMAPIGetGasFromGraphFile)"
                result = w.message if w.status == 0 else f"rejected with status {w.status}: {w.message}"
                print(f"{w.path}: {what} {w.key}: {result}", flush=True)
            step(1)
    return 0


def _lib(a: argparse.Namespace) -> int:
    from pathlib import Path

    from cvmc.runtime.devices.aot import CAPI, write_library, write_output
    from cvmc.runtime.frontend import files

    if a.header:  # a header that could not be written is refused before the library is built
        try:
            files.check_target(a.header)
        except OSError as e:
            raise files.write_error("the C-API header", a.header, e) from None
    print(write_library(a.output))
    if a.header:
        write_output(Path(a.header), (CAPI / "c_api.h").read_bytes(), 0o644, "the C-API header")
        print(a.header)
    return 0


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    cli.setup_logging(a)
    return cli.run_tool("cvm-aot", lambda: _build(a) if a.command == "build" else _lib(a))


if __name__ == "__main__":
    sys.exit(main())
