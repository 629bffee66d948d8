"""The consensus corpus: mutated models on which cvm-runtime's decision was recorded (tests/consensus/generate.py).

Each case is replayed from its seed, with no oracle: cvmc must take the runtime's decision (accept, or reject with
the same class) and give the same output bytes. A case marked `deviation` is one where the runtime's result depends
on memory it does not own (`undefined in cvm-runtime`), or one of cvmc's documented limits (`not modelled by cvmc`);
cvmc refuses it with a logic error that says so (README, "Decisions that differ from cvm-runtime"). On cpu the
accepted cases run compiled."""

import hashlib
import json
import pathlib
import sys

import pytest
from conftest import CVM_CORPUS, DATA

import cvmc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "consensus"))
from mutations import mutate

ROWS = [json.loads(line) for line in (DATA / "consensus" / "cases.jsonl").read_text().splitlines()]


def decide(row: dict, device: str) -> tuple[str, str]:
    case = CVM_CORPUS / row["case"]
    js, pb, kind = mutate(case, row["seed"])
    assert kind == row["kind"], "the mutation is not the one recorded: mutations.py changed; regenerate"
    try:
        m = cvmc.load_model(js, pb, device=device)
        out = m.infer((case / "input.bin").read_bytes())
    except cvmc.CVMLogicError as e:
        return "logic", str(e)
    except cvmc.CVMRuntimeError as e:
        return "runtime", str(e)
    return "ok", hashlib.sha256(out).hexdigest()[:16]


def check(row: dict, device: str) -> None:
    status, detail = decide(row, device)
    if row.get("deviation"):
        assert status == "logic" and ("undefined in cvm-runtime" in detail or "not modelled by cvmc" in detail), \
            (status, detail)
        return
    assert status == row["status"], f"runtime: {row['status']} ({row['why']}); cvmc: {status} ({detail})"
    if status == "ok":
        assert detail == row["out"], "output bytes differ from cvm-runtime's"


def test_the_corpus_is_large_and_varied():
    kinds = {r["kind"] for r in ROWS}
    assert len(ROWS) >= 2000 and {r["status"] for r in ROWS} == {"ok", "logic", "runtime"}
    assert {"json_text", "keys", "versions", "storage", "graph", "params"} <= kinds
    assert len({r["case"].rsplit("_", 1)[0] for r in ROWS}) >= 37  # every operator's cases are mutated


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['seed']}-{r['case']}-{r['kind']}")
def test_reference_takes_the_runtimes_decision(row):
    check(row, "reference")


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['seed']}-{r['case']}-{r['kind']}")
def test_cpu_takes_the_runtimes_decision(row):
    check(row, "cpu")
