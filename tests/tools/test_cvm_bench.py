"""cvm-bench (issue 39): cold and warm latency (median, p90, p99, min), throughput, --json, --compare rows each in
a process of their own; its arguments at their bounds. Timings are never asserted, only their presence and order."""

import json

import numpy as np
import pytest

import cvmc.examples
from cvmc.tools import cvm_bench

DIGITS = cvmc.examples.digits()


def test_percentiles_by_nearest_rank():
    s = [float(i) for i in range(1, 101)]
    assert (cvm_bench.percentile(s, 90), cvm_bench.percentile(s, 99), cvm_bench.percentile(s, 100)) == (90, 99, 100)
    assert cvm_bench.percentile([3.0], 99) == 3.0
    lat = cvm_bench.latency([5.0, 1.0, 3.0])
    assert lat["median_ms"] == 3.0 and lat["min_ms"] == 1.0 and lat["runs"] == 3


def test_json_of_a_folder(capsys):
    args = [str(DIGITS.folder), "--device", "reference", "--repeat", "10", "--warmup", "0", "--batch", "4", "--json"]
    assert cvm_bench.main(args) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["device"] == "reference" and r["gas"] == 39850 and r["model"] == str(DIGITS.folder)
    w = r["warm"]
    assert w["runs"] == 10 and w["min_ms"] <= w["median_ms"] <= w["p90_ms"] <= w["p99_ms"]
    assert r["cold"]["load_ms"] > 0 and r["cold"]["first_run_ms"] > 0
    assert r["throughput"]["batch"] == 4 and r["throughput"]["inputs_per_s"] > 0


def test_text_and_time(capsys):
    assert cvm_bench.main([str(DIGITS.graph), str(DIGITS.params), "--device", "reference", "--repeat", "1",
                           "--time", "0.05", "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert "cold: load" in out and "warm (" in out and "median" in out and "p99" in out and "throughput:" in out
    runs = int(out.split("warm (")[1].split()[0])
    assert runs >= 10  # --time runs at least 10


def test_an_input_file(tmp_path, capsys):
    np.save(tmp_path / "x.npy", DIGITS.test_set()[0][:3])
    assert cvm_bench.main([str(DIGITS.folder), "--device", "reference", "--repeat", "2", "--input",
                           str(tmp_path / "x.npy"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["throughput"]["batch"] == 3


def test_compare_threads_and_devices_in_one_run(capsys):
    assert cvm_bench.main([str(DIGITS.folder), "--repeat", "3", "--warmup", "0", "--batch", "2", "--device",
                           "reference", "--compare", "threads=1,2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["setting"] for r in rows] == [{"threads": "1"}, {"threads": "2"}]
    assert [r["threads"] for r in rows] == [1, 2] and all(r["device"] == "reference" for r in rows)


def test_compare_a_tier_that_does_not_exist_is_a_row_with_the_error(capsys):
    assert cvm_bench.main([str(DIGITS.folder), "--repeat", "2", "--compare", "tier=nonsuch"]) == 0
    out = capsys.readouterr().out
    assert "| tier=nonsuch |" in out and "CVMC_ISA" in out


@pytest.mark.parametrize("args", [["--repeat", "0"], ["--warmup", "-1"], ["--threads", "0"], ["--time", "-1"],
                                  ["--compare", "color=1,2"], ["--compare", "threads="]])
def test_bad_arguments_are_usage_errors(args, capsys):
    with pytest.raises(SystemExit) as e:
        cvm_bench.main([str(DIGITS.folder), *args])
    assert e.value.code == 64


def test_bounds_that_run(capsys):
    assert cvm_bench.main([str(DIGITS.folder), "--device", "reference", "--repeat", "1", "--warmup", "0",
                           "--batch", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warm"]["runs"] == 1
