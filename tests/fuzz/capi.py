"""Fuzzing the C API's entry points (atheris driving `libcvm.so` through ctypes, the library built with ASan and
UBSan): each input is a program of API calls on two stored models (load, free, infer with a wrong or right
length, the getters, forged handles, graph files of random bytes), so that handles are freed, reused and forged
in every order.

    python tests/fuzz/capi.py --seconds 60 [--work DIR]        # `make fuzz-long`
    python tests/fuzz/capi.py --runs 200 --seed 1 [--work DIR]  # 200 inputs, the same ones every time (no time bound)

The rules: every status is 0, 1 or 2; an inference on a live handle with the right length gives that model's
bytes; a handle that is not live is status 2; and ASan/UBSan see no error in the library (the process is run with
libasan preloaded; a report ends it, and libFuzzer keeps the input as `crash-*`). The C code is not
coverage-instrumented (that needs clang's -fsanitize=fuzzer, which this host lacks): libFuzzer is guided by the
harness's own Python, and the call programs do the rest.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CASES = ("model_digits_mlp_000", "dense_000")


def _build(work: Path) -> Path:
    """A store of the two models and the library with ASan and UBSan (`work/libcvm.so`)."""
    sys.path.insert(0, str(TESTS))
    from conftest import CVM_CORPUS, case_params

    from cvmc.runtime.devices import aot

    os.environ["XDG_STATE_HOME"] = str(work / "state")
    for name in CASES:
        d = CVM_CORPUS / name
        aot.build_model((d / "model.json").read_bytes(), case_params(d), work / "store")
    lib = work / "libcvm.so"
    subprocess.run(["gcc", "-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-shared",
                    "-fPIC", "-pthread", "-std=gnu11", "-o", str(lib),
                    *aot.library_inputs(work), "-ldl"], check=True)
    return lib


class Api:
    def __init__(self, lib: Path):
        self.lib = ctypes.CDLL(str(lib))
        self.models = []
        for name in CASES:
            d = TESTS / "data" / "cvm" / name
            params = d / "params.bin"
            self.models.append(((d / "model.json").read_bytes(), params.read_bytes() if params.exists() else b"",
                                (d / "input.bin").read_bytes()))
        self.want: list[bytes] = []  # each model's output bytes
        for i in range(len(CASES)):
            h = self.load(i)
            status, out = self.infer(h, i, 0)
            assert status == 0
            self.want.append(out[:self.out_len(h)[1]])
            self.lib.CVMAPIFreeModel(h)

    def load(self, i: int) -> ctypes.c_void_p:
        graph, params, _ = self.models[i]
        net = ctypes.c_void_p()
        status = self.lib.CVMAPILoadModel(graph, len(graph), params, len(params), ctypes.byref(net), 0, 0)
        assert status == 0, status
        return net

    def out_len(self, h: ctypes.c_void_p) -> tuple[int, int]:
        n = ctypes.c_ulonglong(0)
        return self.lib.CVMAPIGetOutputLength(h, ctypes.byref(n)), n.value

    def infer(self, h: ctypes.c_void_p, i: int, delta: int) -> tuple[int, bytes]:
        x = self.models[i][2]
        out = ctypes.create_string_buffer(4096)
        n = max(0, len(x) + delta)
        status = self.lib.CVMAPIInference(h, (x + bytes(max(0, delta)))[:n], n, out)
        return status, out.raw


_API: Api | None = None


def one_input(data: bytes) -> None:
    """Run the call program `data` (two bytes a call) against the library."""
    api = _API
    assert api is not None
    live: list[tuple[ctypes.c_void_p, int]] = []
    dead: list[ctypes.c_void_p] = []
    for at in range(0, len(data) - 1, 2):
        op, arg = data[at] % 7, data[at + 1]
        if op == 0 and len(live) < 8:
            live.append((api.load(arg % 2), arg % 2))
        elif op == 1 and live:
            h, _ = live.pop(arg % len(live))
            assert api.lib.CVMAPIFreeModel(h) == 0
            dead.append(h)
        elif op == 2 and live:
            h, i = live[arg % len(live)]
            delta = (arg >> 4) - 8 if arg & 8 else 0
            status, out = api.infer(h, i, delta)
            assert status == (0 if delta == 0 else 1), (status, delta)
            assert delta != 0 or out[:len(api.want[i])] == api.want[i]
        elif op == 3 and dead:
            h = dead[arg % len(dead)]
            assert api.infer(h, 0, 0)[0] == 2 and api.out_len(h)[0] == 2 and api.lib.CVMAPIFreeModel(h) == 2
        elif op == 4:
            forged = ctypes.c_void_p(int.from_bytes(data[at + 1:at + 9].ljust(8, b"\0"), "little") or 1)
            if all(forged.value != h.value for h, _ in live):
                assert api.out_len(forged)[0] == 2
        elif op == 5 and live:
            h, i = live[arg % len(live)]
            assert api.out_len(h) == (0, len(api.want[i]))
        elif op == 6:
            gas = ctypes.c_ulonglong(0)
            text = data[at + 1:at + 1 + arg].replace(b"\0", b" ")
            assert api.lib.CVMAPIGetGasFromGraphFile(text, ctypes.byref(gas)) in (0, 1, 2)
    for h, _ in live:
        api.lib.CVMAPIFreeModel(h)


def fuzz(lib: Path, argv: list[str]) -> None:
    global _API
    import atheris

    _API = Api(lib)
    atheris.Setup([sys.argv[0], *argv], one_input)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=int, default=60, help="how long to fuzz (default 60), unless --runs is given")
    p.add_argument("--runs", type=int, help="run this many inputs instead, however long they take (libFuzzer's -runs)")
    p.add_argument("--seed", type=int, default=1, help="libFuzzer's random seed with --runs (default 1)")
    p.add_argument("--work", help="the folder of the store, the library, the corpus and any crash")
    a = p.parse_args(argv)
    if a.runs is not None and a.runs < 1:
        p.error(f"expected --runs >= 1, got {a.runs}")
    from libfuzzer import campaign, have_atheris

    if not have_atheris("capi"):
        return 0
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="cvmc-fuzz-capi-"))
    work.mkdir(parents=True, exist_ok=True)
    lib = _build(work)
    corpus = work / "corpus"
    corpus.mkdir(exist_ok=True)
    (corpus / "seed").write_bytes(bytes([0, 0, 2, 0, 5, 0, 0, 1, 1, 0, 3, 0, 2, 0, 2, 0x98, 4, 7, 6, 20]))
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    cxx = subprocess.run(["gcc", "-print-file-name=libstdc++.so.6"], capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "LD_PRELOAD": f"{asan} {cxx}",  # libstdc++ too: atheris throws C++ exceptions
           "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1", "CVMC_AOT_STORE": str(work / "store"),
           "XDG_STATE_HOME": str(work / "state")}
    if a.runs is None:
        return campaign("capi (call programs)", __file__, [str(lib)], work, a.seconds, 512, env=env)
    # count-bound: libFuzzer's -max_total_time=0 is no limit; the seed fixes the inputs it makes
    return campaign("capi (call programs)", __file__, [str(lib)], work, 0, 512, [f"-runs={a.runs}", f"-seed={a.seed}"],
                    env=env)

if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--run":
        fuzz(Path(sys.argv[2]), sys.argv[3:])
    else:
        sys.exit(main())
