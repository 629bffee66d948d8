#!/usr/bin/env python3
"""Build the consensus corpus: mutated corpus models with cvm-runtime's decision on each.

    python tests/consensus/generate.py --oracle PATH/run_model [--count 2400] [--start 0]

Needs the real cvm-runtime's `run_model` driver (README, "Checking decisions against cvm-runtime"). For each seed,
`mutations.mutate` makes a model from a valid case of tests/data/cvm; the oracle loads it through the C API and
infers on the case's input. One JSON line per case goes to tests/data/consensus/cases.jsonl: the seed, the case, the
kind of mutation, the runtime's status (ok, logic, runtime), the first 16 hex digits of the SHA-256 of its output
bytes, the first words of its message, and `deviation` when cvmc refuses the model as undefined in cvm-runtime
or not modelled by cvmc (README, "Decisions that differ from cvm-runtime"). Cases whose input no longer fits the
model, and cases the runtime crashes on, are left out. Seeds from mutations.CONV_SEEDS on mutate a conv2d's
geometry (`--start 100000`). `make test` replays the file with no oracle (tests/runtime/test_consensus.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from mutations import CONV_SEEDS, has_conv, mutate  # noqa: E402

CORPUS = HERE.parent / "data" / "cvm"
OUT = HERE.parent / "data" / "consensus" / "cases.jsonl"


def valid_cases() -> list[pathlib.Path]:
    out = []
    for d in sorted(CORPUS.iterdir()):
        meta = json.loads((d / "case.json").read_text())
        if meta["kind"] != "invalid" and (d / "input.bin").exists():
            out.append(d)
    return out


def case_for(seed: int, cases: list[pathlib.Path]) -> pathlib.Path:
    if seed >= CONV_SEEDS:
        cases = [c for c in cases if has_conv(c)]
    return cases[random.Random(seed * 7919 + 1).randrange(len(cases))]


def oracle(run_model: str, js: bytes, pb: bytes, inp: bytes) -> tuple[str, str, str]:
    with tempfile.TemporaryDirectory() as t:
        d = pathlib.Path(t)
        (d / "m.json").write_bytes(js)
        (d / "p.bin").write_bytes(pb)
        (d / "i.bin").write_bytes(inp)
        try:
            r = subprocess.run([run_model, "--device", "formal", "--api-bytes", "-o", str(d / "o.bin"),
                                str(d / "m.json"), str(d / "p.bin"), str(d / "i.bin")], capture_output=True,
                               timeout=60)
        except subprocess.TimeoutExpired:
            return "hang", "", ""
        status = {0: "ok", 11: "logic", 12: "runtime", 3: "input"}.get(r.returncode, "crash")
        out = hashlib.sha256((d / "o.bin").read_bytes()).hexdigest()[:16] if status == "ok" else ""
        msg = r.stderr.decode(errors="replace")
        if status == "ok" and f" input_len={len(inp)} " not in msg:
            return "input", "", ""  # the driver widened or narrowed the input to fit: not the API's bytes
        if status == "ok":
            return status, out, ""
        i = msg.find("Check failed")
        why = (msg[i + 14:i + 90] if i >= 0 else msg.strip().splitlines()[-1][:76] if msg.strip() else "")
        return status, out, why.replace("\n", " ").strip()


def cvmc_deviation(js: bytes, pb: bytes) -> bool:
    import cvmc

    try:
        cvmc.load_model(js, pb, device="reference")
    except cvmc.CVMLogicError as e:
        return "undefined in cvm-runtime" in str(e) or "not modelled by cvmc" in str(e)
    except cvmc.CVMError:
        pass
    return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--count", type=int, default=2400)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("-o", "--out", default=str(OUT))
    a = ap.parse_args()
    cases = valid_cases()

    def one(seed: int) -> dict | None:
        case = case_for(seed, cases)
        js, pb, kind = mutate(case, seed)
        status, out, why = oracle(a.oracle, js, pb, (case / "input.bin").read_bytes())
        if status not in ("ok", "logic", "runtime"):
            return None
        row = {"seed": seed, "case": case.name, "kind": kind, "status": status, "out": out, "why": why}
        if cvmc_deviation(js, pb):
            row["deviation"] = True
        return row

    with ThreadPoolExecutor(2) as ex:
        rows = [r for r in ex.map(one, range(a.start, a.start + a.count)) if r is not None]
    pathlib.Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    by = {}
    for r in rows:
        by[r["status"]] = by.get(r["status"], 0) + 1
    print(f"{len(rows)} cases written to {a.out}: {by}; {sum('deviation' in r for r in rows)} deviations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
