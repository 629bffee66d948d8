"""`make sanitize`: the C-API library and the C client, built with AddressSanitizer and UndefinedBehaviorSanitizer,
then with ThreadSanitizer, run over a small store: cases, bad arguments, stale and forged handles, a net freed
while threads run it, tampered and planted entries, concurrent inferences, each tier of a `--target all` object
(CVMC_CPU_MASK) and an amx object refused. Any sanitizer report fails the run.

    python tests/runtime/capi/sanitize.py [--keep DIR]

The models' own objects are cvm-aot's (not instrumented); the library's code around them (the store reader, the
registry, the thread pool, the packing) is. About a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CVM_CORPUS, case_params  # noqa: E402

from cvmc.runtime.devices import aot  # noqa: E402
from cvmc.runtime.engine import store  # noqa: E402

CASES = ["model_digits_mlp_000", "dense_000", "conv2d_000", "chain_002", "model_bench_resnet_000", "invalid_000",
         "broadcast_div_003"]
SANITIZERS = {"asan+ubsan": "address,undefined", "tsan": "thread"}
REPORT = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|"
                    r"SUMMARY: \w+Sanitizer")


def build(root: Path, name: str, flags: str) -> Path:
    out = root / name
    out.mkdir()
    common = ["-g", "-O1", "-fno-omit-frame-pointer", f"-fsanitize={flags}", "-fno-sanitize-recover=all",
              "-pthread", "-std=gnu11"]
    subprocess.run(["gcc", *common, "-shared", "-fPIC", "-fvisibility=hidden", "-o", str(out / "libcvm.so"),
                    *aot.library_inputs(out), "-ldl"], check=True)
    subprocess.run(["gcc", *common, "-I", str(aot.CAPI), "-o", str(out / "cvm_client"), str(HERE / "cvm_client.c"),
                    "-L", str(out), "-lcvm", f"-Wl,-rpath,{out}"], check=True)
    return out / "cvm_client"


def runs(root: Path) -> list[tuple[str, list[str], dict[str, str], str]]:
    """(what, arguments, environment changes, a line the client must print) of every run."""
    c = [str(CVM_CORPUS / n) for n in CASES]
    tampered = root / "tampered"
    tampered.mkdir()
    case = CVM_CORPUS / "conv2d_000"
    key = aot.model_key((case / "model.json").read_bytes(), case_params(case))
    data = aot.entry_path(root / "store", key).read_bytes()
    aot.entry_path(tampered, key).write_bytes(data[:-100] + bytes([data[-100] ^ 1]) + data[-99:])
    sparse = root / "sparse"
    sparse.mkdir()
    with open(aot.entry_path(sparse, key), "wb") as f:
        f.write(store.MAGIC + (3 << 30).to_bytes(8, "little") + bytes(64))
        f.truncate(store.HEADER_BYTES + (3 << 30))
    load = ["--load", str(case / "model.json"), str(case / "params.bin")]
    tiers = ["--cases", str(root / "out"), c[4]]  # the bench model, built with --target all and amx
    every = {"CVMC_AOT_STORE": str(root / "store-all"), "CVMC_AOT_VERBOSE": "1"}
    return [
        *((f"--target all, CVMC_CPU_MASK={mask or '(none)'}", tiers, {**every, "CVMC_CPU_MASK": mask}, "infer=0")
          for mask in ("", "avx512vnni", "avx2")),
        ("--target amx without AMX (masked)", tiers,
         {**every, "CVMC_AOT_STORE": str(root / "store-amx"), "CVMC_CPU_MASK": "amx-int8"}, "load=2"),
        ("cases", ["--cases", str(root / "out"), *c], {}, "case=model_bench_resnet_000 graph_status=0"),
        ("cases, 3 threads", ["--cases", str(root / "out"), c[4]], {"CVMC_THREADS": "3"}, "infer=0"),
        ("bad arguments", ["--edges", c[0]], {}, "free=0"),
        ("stale and forged handles, free while running", ["--stale", c[0], c[1]], {"CVMC_THREADS": "2"},
         "statuses_other_than_0_or_2=0"),
        ("concurrent inferences", ["--threads", "3", c[4]], {"CVMC_THREADS": "2"}, "one shared net: equal"),
        ("a flipped byte", load, {"CVMC_AOT_STORE": str(tampered)}, "load=2"),
        ("a planted sparse entry", load, {"CVMC_AOT_STORE": str(sparse)}, "load=2"),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    a = p.parse_args(argv)
    if shutil.which("gcc") is None:
        print("sanitize: no gcc; skipped")
        return 0
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="cvmc-sanitize-"))
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "XDG_STATE_HOME": str(root / "state"), "CVMC_AOT_STORE": str(root / "store")}
    env.pop("CVMC_THREADS", None)
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]
    (root / "out").mkdir(exist_ok=True)
    t0 = time.perf_counter()
    for name in CASES:
        d = CVM_CORPUS / name
        aot.build_model((d / "model.json").read_bytes(), case_params(d), root / "store")
    d = CVM_CORPUS / CASES[4]
    for target in ("all", "amx"):  # every tier's known-answer check and model, and the refusal, instrumented around
        aot.build_model((d / "model.json").read_bytes(), case_params(d), root / f"store-{target}", target=target)
    print(f"sanitize: a store of {len(CASES)} models in {time.perf_counter() - t0:.1f} s")
    failed = 0
    plan = runs(root)
    for label, flags in SANITIZERS.items():
        client = build(root, label, flags)
        options = {"ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1", "UBSAN_OPTIONS": "print_stacktrace=1",
                   "TSAN_OPTIONS": "halt_on_error=1"}
        # No helper threads under TSan: the scheduler that orders a model's kernels across helpers is LLVM IR
        # (runtime/engine/program.ll, not instrumented), so TSan would take two kernels reusing arena bytes for a race;
        # the callers' threads still race each other through the library's own C code (handles, store, load).
        forced = {"CVMC_THREADS": "1"} if label == "tsan" else {}
        for what, args, extra, expected in plan:
            t = time.perf_counter()
            r = subprocess.run([str(client), *args], capture_output=True, text=True,
                               env={**env, **options, **extra, **forced}, timeout=600)
            reports = [line for line in r.stderr.splitlines() if REPORT.search(line)]
            ok = r.returncode == 0 and not reports and expected in r.stdout
            failed += not ok
            print(f"sanitize: {label:<10} {what:<48} {'ok' if ok else 'FAILED'} (exit {r.returncode}, "
                  f"{time.perf_counter() - t:.1f} s)")
            if not ok:
                print(r.stderr[-4000:])
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"sanitize: {'no sanitizer report' if not failed else f'{failed} runs failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
