#!/usr/bin/env python3
"""Audit the disagreements of the shared consensus fuzzer: is the runtime's own decision defined?

    python tests/consensus/audit.py --oracle PATH/run_model [--device reference|cpu] [--count 3000] [--seed 101]
                                    [--reruns 6] [--no-valgrind]

Makes the very models `tests/corpus_tools/consensus_fuzz.py` makes for the same seed and count (its mutations,
its random sequence), takes cvmc's and cvm-runtime's decision on each, and for every disagreement asks whether the
runtime's run is defined at all:
  - `unstable`: the same binary, run again on the same files (`--reruns` times), takes another decision or gives
    other bytes (uninitialised memory, address-space layout);
  - `memory error`: valgrind's memcheck reports an invalid read or write, or a decision or output taken from
    uninitialised memory (`cvm-runtime.supp` silences the runtime's new[]/delete mismatch, which every model
    shows);
  - `input narrowed`: the driver converted an int32 input file to the int8 input the model asks for, so the runtime
    did not see the bytes cvmc saw (`run_model` does this for convenience; the C API refuses the length);
  - `documented limit`: the runtime's run is defined, and cvmc refuses the model as `not modelled by cvmc`, or
    takes an allocation of more than 2^34 bytes to fail where the runtime's outcome depends on the machine's memory;
  - `defined`: none of these. Such a disagreement is a cvmc bug, and the audit fails.
Prints one line per disagreement and a summary; exit 0 when no disagreement is `defined`. Needs valgrind for the
memory check (apt install valgrind); the README's "Decisions that differ from cvm-runtime" lists each deviation.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "corpus_tools"))
from consensus_fuzz import semantic_mutation  # noqa: E402
from fuzz_model_files import mutate_json, mutate_params  # noqa: E402

SUPPRESSIONS = HERE / "cvm-runtime.supp"


def fuzz_cases(corpus: pathlib.Path, count: int, seed: int):
    """(index, case name, mutation kind, json text, params, input) as consensus_fuzz.py makes them."""
    rng = random.Random(seed)
    cases = [c for c in sorted(corpus.iterdir()) if (c / "case.json").exists() and (c / "input.bin").exists()
             and json.loads((c / "case.json").read_text()).get("kind") != "invalid"]
    for jid in range(count):
        c = rng.choice(cases)
        doc = json.loads((c / "model.json").read_text())
        pb, inp = (c / "params.bin").read_bytes(), (c / "input.bin").read_bytes()
        r = rng.random()
        if r < 0.6:
            d2, pb2, kind = semantic_mutation(doc, pb, rng)
            js2 = json.dumps(d2)
        elif r < 0.85:
            js2, pb2, kind = json.dumps(mutate_json(doc, rng)), pb, "structural_json"
        else:
            js2, pb2, kind = json.dumps(doc), mutate_params(pb, rng), "structural_params"
        yield jid, c.name, kind, js2, pb2, inp


def run_oracle(run_model: str, tmp: pathlib.Path, prefix: list[str] | None = None) -> tuple[str, bytes, str]:
    """(status, output bytes, stderr) of one run of the runtime on the files in `tmp`."""
    out = tmp / "o.bin"
    out.unlink(missing_ok=True)
    cmd = [*(prefix or []), run_model, "--device", "formal", "--api-bytes", "-o", str(out),
           str(tmp / "m.json"), str(tmp / "p.bin"), str(tmp / "i.bin")]
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "hang", b"", ""
    status = {0: "ok", 11: "logic", 12: "runtime", 3: "skip", 99: "memcheck"}.get(r.returncode, "crash")
    return status, out.read_bytes() if status == "ok" else b"", r.stderr.decode(errors="replace")


def cvmc_decision(js: str, pb: bytes, inp: bytes, device: str) -> tuple[str, bytes, str]:
    import cvmc

    try:
        return "ok", bytes(cvmc.load_model(js, pb, device=device).infer(inp)), ""
    except cvmc.CVMLogicError as e:
        return "logic", b"", str(e)
    except cvmc.CVMRuntimeError as e:
        return "runtime", b"", str(e)


def first_memcheck_error(stderr: str) -> str:
    """The first memcheck error of a valgrind log: its kind and the innermost function of the runtime."""
    lines = [re.sub(r"^==\d+== ?", "", s) for s in stderr.splitlines() if s.startswith("==")]
    for i, line in enumerate(lines):
        if re.match(r"(Invalid (read|write)|Conditional jump|Use of uninitialised|Syscall param)", line):
            frame = next((m.group(1) for s in lines[i + 1:i + 6] if (m := re.search(r"(?:at|by) 0x\w+: (\S+?)\(",
                                                                                   s)) and "cvm" in s), "?")
            return f"{line.strip()} in {frame}"
    return "memcheck error"


def classify(run_model: str, tmp: pathlib.Path, first: tuple[str, bytes, str], mine: tuple[str, bytes, str],
             input_len: int, reruns: int, valgrind: bool) -> tuple[str, str]:
    if f" input_len={input_len} " not in first[2] and first[0] == "ok":
        return "input narrowed", "the driver converted the input file to the model's input type"
    seen = {(first[0], first[1])}
    for _ in range(reruns):
        status, out, _ = run_oracle(run_model, tmp)
        seen.add((status, out))
    if len(seen) > 1:
        return "unstable", " / ".join(sorted({s for s, _ in seen}))
    if valgrind:
        status, _, log = run_oracle(run_model, tmp, ["valgrind", "-q", f"--suppressions={SUPPRESSIONS}",
                                                     "--error-exitcode=99", "--exit-on-first-error=yes"])
        if status == "memcheck":
            return "memory error", first_memcheck_error(log)
    if "not modelled by cvmc" in mine[2] or "std::bad_alloc" in mine[2]:
        return "documented limit", "the runtime's run is defined; cvmc's README lists this limit"
    return "defined", "the runtime's run is stable and clean under memcheck"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", required=True, help="cvm-runtime's run_model driver (tests/consensus/ORACLE.md)")
    ap.add_argument("--corpus", type=pathlib.Path, default=ROOT / "tests" / "data" / "cvm")
    ap.add_argument("--device", default="reference")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=101)
    ap.add_argument("--reruns", type=int, default=6)
    ap.add_argument("--no-valgrind", action="store_true")
    args = ap.parse_args()
    valgrind = not args.no_valgrind
    if valgrind and shutil.which("valgrind") is None:
        ap.error("valgrind is not installed (or pass --no-valgrind)")

    tally, why = collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        for jid, name, kind, js, pb, inp in fuzz_cases(args.corpus, args.count, args.seed):
            (tmp / "m.json").write_text(js)
            (tmp / "p.bin").write_bytes(pb)
            (tmp / "i.bin").write_bytes(inp)
            o = run_oracle(args.oracle, tmp)
            if o[0] in ("skip", "crash", "hang"):
                tally[o[0]] += 1
                continue
            p = cvmc_decision(js, pb, inp, args.device)
            if p[0] == o[0] and (p[0] != "ok" or p[1] == o[1]):
                tally["agree"] += 1
                continue
            verdict, detail = classify(args.oracle, tmp, o, p, len(inp), args.reruns, valgrind)
            tally["disagree"] += 1
            tally[verdict] += 1
            why[verdict] += 1
            print(f"{jid:5d} {name:28s} {kind:18s} runtime {o[0]:7s} cvmc {p[0]:7s} {verdict}: {detail}")
            print(f"{'':6s}cvmc: {p[2][:150]}")
    compared = tally["agree"] + tally["disagree"]
    print(f"\n{args.device}, seed {args.seed}: {tally['agree']}/{compared} agree "
          f"({100 * tally['agree'] / max(compared, 1):.2f}%); runtime crashed {tally['crash']}, hung "
          f"{tally['hang']}, skipped {tally['skip']}")
    print("disagreements: " + (", ".join(f"{n} {k}" for k, n in why.most_common()) or "none"))
    return 1 if why["defined"] else 0


if __name__ == "__main__":
    sys.exit(main())
