"""The consensus corpus through cvm-runtime's C API as cvmc serves it: `make aot-consensus`.

Every case of tests/data/consensus/cases.jsonl (a corpus model mutated from its seed, with cvm-runtime's recorded
decision and output hash), and a sample of tests/data/consensus/grid.jsonl.gz (grid.cpu_sample: one accepted model
per operator and rank class, one refusal per operator and message), is built into a store by `cvm-aot build`'s
function and run by the C client of
tests/runtime/test_aot.py (c_api.h only) through the library of `cvm-aot lib`. The decision (load or inference
status) and the output bytes must be the runtime's; a case marked `deviation` must be refused with a logic error.
About a minute on 2 cores (too long for `make test`, which runs the plain corpus this way).

    python tests/consensus/aot_replay.py [--keep DIR] [--target all]      # make aot-consensus [AOT_TARGET=all]

`--target` builds the store for that `cvm-aot build --target`; with `all`, `CVMC_CPU_MASK` in the environment picks
the tier the library runs (e.g. CVMC_CPU_MASK=avx512f: the avx2 kernels on an AVX-512 CPU; =avx2: the generic ones).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE))

from grid import cpu_sample, model_files, read_rows  # noqa: E402
from mutations import mutate  # noqa: E402

from cvmc.runtime.devices import aot  # noqa: E402

STATUS = {"0": "ok", "1": "logic", "2": "runtime"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    ap.add_argument("--no-grid", action="store_true", help="leave out the grid corpus's sample")
    ap.add_argument("--target", default="host", choices=aot.TARGET_NAMES, help="cvm-aot build --target")
    a = ap.parse_args()
    work = pathlib.Path(a.keep or tempfile.mkdtemp(prefix="cvmc-aot-consensus-"))
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state"), "CVMC_AOT_STORE": str(work / "store")}
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]  # the store's key, for this run only
    rows = []  # (name, model.json, params.bin, input, the runtime's row)
    for r in (json.loads(line) for line in (DATA / "consensus" / "cases.jsonl").read_text().splitlines()):
        js, pb, _ = mutate(DATA / "cvm" / r["case"], r["seed"])
        rows.append((f"{r['seed']}-{r['case']}", js, pb, (DATA / "cvm" / r["case"] / "input.bin").read_bytes(), r))
    if not a.no_grid:
        for i, r in enumerate(cpu_sample(read_rows(), every_refusal=False)):
            js, pb, inp = model_files(r)
            rows.append((f"grid{i}-{r['op']}", js, pb, inp, {**r, "out": r["hash"], "kind": r["grid"]}))
    cases = work / "cases"
    folders = []
    for name, js, pb, inp, _ in rows:
        d = cases / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "model.json").write_bytes(js)
        (d / "params.bin").write_bytes(pb)
        (d / "input.bin").write_bytes(inp)
        aot.build_model(js, pb, work / "store", target=a.target)
        folders.append(d)
    aot.write_library(work / "libcvm.so")
    client = work / "cvm_client"
    subprocess.run(["gcc", "-O1", "-I", str(aot.CAPI), "-o", str(client), str(HERE.parent / "runtime" / "capi" /
                    "cvm_client.c"), "-L", str(work), "-lcvm", f"-Wl,-rpath,{work}", "-pthread"], check=True)
    out = work / "out"
    out.mkdir(exist_ok=True)
    r = subprocess.run([str(client), "--cases", str(out), *map(str, folders)], capture_output=True, text=True,
                       env=env, check=True)
    facts = {}
    for line in r.stdout.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split(" ") if "=" in kv)
        facts[fields["case"]] = fields
    differ = 0
    for name, _, _, _, row in rows:
        f = facts[name]
        status = STATUS[f["load"]] if f["load"] != "0" else STATUS[f["infer"]]
        if row.get("deviation") or row.get("limit"):  # refused as undefined in cvm-runtime / not modelled by cvmc
            same = status == "logic"
        else:
            same = status == row["status"] and (
                status != "ok" or hashlib.sha256((out / f"{name}.bin").read_bytes()).hexdigest()[:16] == row["out"])
        if not same:
            differ += 1
            print(f"differs: {name} ({row['kind']}): runtime {row['status']} ({row['why'][:80]}), C API {status}")
    print(f"{len(rows) - differ} of {len(rows)} cases take cvm-runtime's decision through the C API")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
