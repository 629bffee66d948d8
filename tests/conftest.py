"""Shared test helpers: the vendored conformance corpus in tests/data."""

import json
import pathlib

import numpy as np

DATA = pathlib.Path(__file__).parent / "data"
CVM_CORPUS = DATA / "cvm"


def corpus_cases(*kinds: str) -> list[pathlib.Path]:
    """Case folders of the CVM corpus whose kind is one of `kinds`, in name order."""
    out = []
    for d in sorted(CVM_CORPUS.iterdir()):
        meta = d / "case.json"
        if meta.exists() and json.loads(meta.read_text())["kind"] in kinds:
            out.append(d)
    return out


def case_meta(d: pathlib.Path) -> dict:
    return json.loads((d / "case.json").read_text())


def case_params(d: pathlib.Path) -> bytes:
    p = d / "params.bin"
    return p.read_bytes() if p.exists() else b""


def case_input(d: pathlib.Path) -> np.ndarray:
    meta = case_meta(d)
    return np.frombuffer((d / "input_i32.bin").read_bytes(), dtype="<i4").reshape(meta["input_shape"])
