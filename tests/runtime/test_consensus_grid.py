"""The grid corpus: one-operator models over every combination of small attribute value sets, with cvm-runtime's
decision on each (tests/consensus/grid.py, issue 29).

Each row rebuilds its model (the operator, its attributes as the file's strings, the input shapes, the declared
output shapes the runtime computed, the fixed input and params pattern) and is replayed with no oracle: cvmc must
take the runtime's decision (accept, or reject with the same class), give the same output bytes and the same gas.
A row marked `deviation` is one where the runtime's run is undefined (it crashed, valgrind found an error, or the
source reads past a vector): cvmc refuses it with a logic error that says `undefined in cvm-runtime`.

Reference replays every row, one test per grid. cpu compiles each accepted model (a tenth of a second or more),
so it replays a sample: every refusal (the loader decides them before any compile), and of the accepted rows
the first of each (operator, input ranks, output ranks) class, which covers every kernel shape class the grids
reach; the accepted rows it skips differ from a sampled one only in attribute values the reference checks.

The value grids (`*_values`, issue 36) give each row its data's and params' values: indices at, below and past a
table or an axis, data at the precision bounds, scores and boxes at the thresholds. Their outputs depend on the
values, so cpu replays every row of 24 accepted models of each, spread over the grid, and every refusal; rows
that differ only in the data share one model and one compile. The storage grid (every storage plan of a few small
graphs) is replayed the same way.
"""

import collections
import hashlib
import json
import pathlib
import sys

import numpy as np
import pytest

import cvmc
from cvmc.runtime.frontend.graph import read_params

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "consensus"))
from grid import STORAGE_GRAPHS, cpu_sample, model_files, read_rows, storage_files

ROWS = read_rows()
BY_GRID: dict[str, list[dict]] = collections.defaultdict(list)
for _r in ROWS:
    BY_GRID[_r["grid"]].append(_r)


_LOADED: dict[tuple[str, bytes, bytes], object] = {}


def decide(row: dict, device: str) -> tuple[str, str, int]:
    js, pb, inp = model_files(row)
    try:
        if "values" in row:  # a value grid's rows share models: one load (one compile) for each
            key = (device, js, pb)
            if key not in _LOADED:
                _LOADED.clear()
                _LOADED[key] = cvmc.load_model(js, pb, device=device)
            m = _LOADED[key]
        else:
            m = cvmc.load_model(js, pb, device=device)
        out = m.infer(inp)
    except cvmc.CVMLogicError as e:
        return "logic", str(e), -1
    except cvmc.CVMRuntimeError as e:
        return "runtime", str(e), -1
    return "ok", hashlib.sha256(out).hexdigest()[:16], m.graph.gas


def mismatch(row: dict, device: str) -> str | None:
    """None when cvmc takes the row's decision, else what differs."""
    status, detail, gas = decide(row, device)
    if row.get("deviation"):
        if status == "logic" and "undefined in cvm-runtime" in detail:
            return None
        return f"expected a refusal as undefined, got {status}: {detail[:120]}"
    if row.get("limit"):
        if status == "logic" and "not modelled by cvmc" in detail:
            return None
        return f"expected a refusal as not modelled, got {status}: {detail[:120]}"
    if status != row["status"]:
        return f"runtime {row['status']} ({row['why']}); cvmc {status}: {detail[:120]}"
    if status == "ok" and (detail, gas) != (row["hash"], row["gas"]):
        return f"output {detail} gas {gas}; the runtime's {row['hash']} gas {row['gas']}"
    return None


def replay(rows: list[dict], device: str) -> None:
    bad = [(r["op"], r.get("attrs", r.get("graph")), r.get("shapes", r.get("storage")), m) for r in rows
           if (m := mismatch(r, device))]
    assert not bad, f"{len(bad)} of {len(rows)} rows differ from cvm-runtime, e.g. {bad[:5]}"


def test_the_grids_are_large_and_varied():
    assert len(ROWS) >= 20000 and {r["status"] for r in ROWS} >= {"ok", "logic", "runtime", "crash"}
    assert len(BY_GRID) >= 20 and all(any(r["status"] == "ok" for r in rows) for rows in BY_GRID.values())
    assert sum("deviation" in r for r in ROWS) >= 100  # reshape's -1 past the dims, its SIGFPEs, where's rows
    ops = {r["op"] for r in ROWS}
    assert {"reshape", "strided_slice", "transpose", "squeeze", "expand_dims", "tile", "repeat", "sum", "max",
            "max_pool2d", "conv2d", "take", "get_valid_counts", "non_max_suppression", "cvm_lut", "clip",
            "cvm_clip", "cvm_right_shift", "cvm_left_shift"} <= ops


@pytest.mark.parametrize("grid", sorted(BY_GRID))
def test_reference_takes_the_runtimes_decision(grid):
    replay(BY_GRID[grid], "reference")


@pytest.mark.compiled
@pytest.mark.parametrize("grid", sorted(BY_GRID))
def test_cpu_takes_the_runtimes_decision(grid):
    rows = BY_GRID[grid]
    replay(value_sample(rows) if grid.endswith("_values") or grid == "storage" else cpu_sample(rows), "cpu")


def value_sample(rows: list[dict], models: int = 24) -> list[dict]:
    """The rows of a value or storage grid that cpu replays: every refusal (decided before any compile), and
    every row of `models` of its accepted models spread evenly over the grid (each a compile), with all the
    data the grid runs on them."""
    def key(r: dict) -> str:
        return json.dumps({k: v for k, v in r.items() if k not in ("values", "status", "hash", "why", "gas")} |
                          {"params": {n: v for n, v in r.get("values", {}).items() if n != "data"}}, sort_keys=True)

    accepted = list(dict.fromkeys(key(r) for r in rows if r["status"] == "ok" and "limit" not in r))
    step = max(1, -(-len(accepted) // models))
    keep = set(accepted[::step])
    return [r for r in rows if r["status"] != "ok" or "limit" in r or key(r) in keep]


def test_the_value_grids_reach_the_edges():
    """The value grids (issue 36): indices below, at and past a table or an axis, data and bounds at the precision
    bounds, scores at the threshold and iou at it, valid counts past N; the runtime accepts some and refuses
    others by the values alone."""
    values = {g: rows for g, rows in BY_GRID.items() if g.endswith("_values")}
    assert set(values) >= {"lut_values", "take_values", "clip_values", "nms_values"}
    for rows in values.values():
        assert all("values" in r for r in rows) and any(r["status"] == "ok" for r in rows)
    assert sum(len(rows) for rows in values.values()) >= 700
    # an index param one past its precision's bound: the runtime's check of the params at load refuses it
    assert any(r["status"] == "logic" and "parameter i" in r["why"] for r in values["take_values"])
    lut = {v for r in values["lut_values"] for v in r["values"]["data"]}
    assert {-1, 0, 255, 256, 257, -(1 << 31), (1 << 31) - 1} <= lut


def _storage_model(graph: str, plan: list[int]) -> tuple[cvmc.Model, np.ndarray, dict[str, np.ndarray]]:
    """A storage grid graph under a plan: the loaded model, its input and its params."""
    js, pb, inp = storage_files({"graph": graph, "storage": plan})
    data = STORAGE_GRAPHS[graph][0][0]
    x = np.frombuffer(inp, dtype="<i1" if data[3] <= 8 else "<i4").astype(np.int64).reshape(data[2])
    return cvmc.load_model(js, pb, device="reference"), x, read_params(pb)


def test_a_param_in_the_datas_buffer_reads_the_data():
    """The fuzzer's case (storage ids [0, 0, 0]): `data` is written over the param at each inference, so
    elemwise_add(data, p) is data + data, however often it runs."""
    m, x, _ = _storage_model("add", [0, 0, 0])
    for _ in range(2):
        assert np.array_equal(np.frombuffer(m.infer(x.astype(np.int8).tobytes()), "<i4"), (2 * x).reshape(-1))


def test_a_smaller_tensor_over_a_param_leaves_the_params_tail():
    """r = data[0:1, 0:3] shares the param's buffer: broadcast_add(p, r) reads r's 3 values, then p's last 3."""
    m, x, params = _storage_model("small_write", [0, 1, 1, 2])
    r = x[0:1, 0:3]
    seen = np.concatenate([r.reshape(-1), params["p"].reshape(-1)[3:]]).reshape(2, 3)
    for _ in range(2):
        assert np.array_equal(np.frombuffer(m.infer(x.astype(np.int8).tobytes()), "<i4"), (seen + r).reshape(-1))


@pytest.mark.parametrize(("graph", "plan", "message"), [
    ("add", [0, 1, 1], "the next inference reads what this one left"),  # y in place over p, which it reads
    ("big_write", [0, 0, 1, 0, 2], "so its output precision would be [11], not [7]"),
    ("chain", [0, 1, 0, 1], "head 1 reads values of precision 9 where the graph gives 8"),
])
def test_the_storage_plans_cvmc_does_not_model(graph, plan, message):
    """Plans the runtime runs deterministically (one inference, clean under valgrind) but cvmc refuses."""
    with pytest.raises(cvmc.CVMLogicError, match="not modelled by cvmc") as e:
        _storage_model(graph, plan)
    assert message in str(e.value)
