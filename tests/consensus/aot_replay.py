"""The consensus corpus through cvm-runtime's C API as cvmc serves it: `make aot-consensus`.

Every case of tests/data/consensus/cases.jsonl (a corpus model mutated from its seed, with cvm-runtime's recorded
decision and output hash) is built into a store by `cvm-aot build`'s function and run by the C client of
tests/runtime/test_aot.py (c_api.h only) through the library of `cvm-aot lib`. The decision (load or inference
status) and the output bytes must be the runtime's; a case marked `deviation` must be refused with a logic error.
About a minute on 2 cores (too long for `make test`, which runs the plain corpus this way).

    python tests/consensus/aot_replay.py [--keep DIR]
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

from mutations import mutate  # noqa: E402

from cvmc.runtime import aot  # noqa: E402

STATUS = {"0": "ok", "1": "logic", "2": "runtime"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    a = ap.parse_args()
    work = pathlib.Path(a.keep or tempfile.mkdtemp(prefix="cvmc-aot-consensus-"))
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state"), "CVMC_AOT_STORE": str(work / "store")}
    os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]  # the store's key, for this run only
    rows = [json.loads(line) for line in (DATA / "consensus" / "cases.jsonl").read_text().splitlines()]
    cases = work / "cases"
    folders = []
    for r in rows:
        js, pb, _ = mutate(DATA / "cvm" / r["case"], r["seed"])
        d = cases / f"{r['seed']}-{r['case']}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "model.json").write_bytes(js)
        (d / "params.bin").write_bytes(pb)
        (d / "input.bin").write_bytes((DATA / "cvm" / r["case"] / "input.bin").read_bytes())
        aot.build_model(js, pb, work / "store")
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
    for row in rows:
        name = f"{row['seed']}-{row['case']}"
        f = facts[name]
        status = STATUS[f["load"]] if f["load"] != "0" else STATUS[f["infer"]]
        if row.get("deviation"):
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
