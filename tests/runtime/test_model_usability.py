"""load_model's threads and dump, Model.run_batch, pickling, and cvm-run's --batch, --dump and --emit-source."""

import pickle

import numpy as np
import pytest

import cvmc
import cvmc.examples
from cvmc.runtime.devices.cpu import MAX_THREADS
from cvmc.runtime.model import physical_cores
from cvmc.tools import cvm_run

DIGITS = cvmc.examples.digits()


@pytest.fixture(scope="module")
def cpu_model():
    return DIGITS.load(device="cpu", threads=2)


@pytest.fixture(scope="module")
def test_set():
    return DIGITS.test_set()[0]


@pytest.mark.parametrize("threads", [0, MAX_THREADS + 1, -1, 1.5, True, "2"])
def test_threads_out_of_range_are_refused(threads):
    with pytest.raises(cvmc.CVMLogicError, match="'threads'"):
        DIGITS.load(device="reference", threads=threads)


@pytest.mark.parametrize("threads", [1, MAX_THREADS])
def test_threads_at_the_bounds(threads):
    m = DIGITS.load(device="cpu", threads=threads)
    assert m.threads == threads
    x = DIGITS.test_set()[0][:3]
    assert np.array_equal(m.run_batch(x)[0], np.stack([m.run(r)[0] for r in x]))


def test_default_threads_are_the_physical_cores(monkeypatch):
    monkeypatch.delenv("CVMC_THREADS", raising=False)
    assert DIGITS.load(device="reference").threads == physical_cores() >= 1
    monkeypatch.setenv("CVMC_THREADS", "1")
    assert DIGITS.load(device="reference").threads == 1


@pytest.mark.parametrize("device", ["reference", "cpu"])
def test_run_batch_equals_a_loop_of_run(device, test_set):
    m = DIGITS.load(device=device, threads=2)
    x = test_set if device == "cpu" else test_set[:40]
    done = []
    (out,) = m.run_batch(x, progress=done.append)
    assert out.dtype == np.int32 and out.shape == (len(x), 1, 10)
    assert np.array_equal(out, np.stack([m.run(r)[0] for r in x]))
    assert sum(done) == len(x)
    preds = out.reshape(len(x), 10).astype(np.int8).argmax(axis=1)
    assert np.array_equal(preds[:40], DIGITS.oracle_predictions()[:len(preds)][:40])


def test_run_batch_edges(cpu_model, test_set):
    (empty,) = cpu_model.run_batch(np.zeros((0, 64), np.int8))
    assert empty.shape == (0, 1, 10)
    (one,) = cpu_model.run_batch(test_set[:1].reshape(1, 1, 64))
    assert np.array_equal(one[0], cpu_model.run(test_set[0])[0])
    with pytest.raises(cvmc.CVMLogicError, match="shape"):
        cpu_model.run_batch(np.zeros((3, 65), np.int8))
    with pytest.raises(cvmc.CVMLogicError, match="int32"):
        cpu_model.run_batch(np.full((2, 64), 1 << 31, np.int64))
    with pytest.raises(cvmc.CVMLogicError, match="integer"):
        cpu_model.run_batch(np.zeros((2, 64), np.float32))


def test_a_model_pickles_and_recompiles(cpu_model, test_set):
    m2 = pickle.loads(pickle.dumps(cpu_model))
    assert (m2.device, m2.threads, m2.gas, m2.name) == (cpu_model.device, cpu_model.threads, cpu_model.gas,
                                                        cpu_model.name)
    assert np.array_equal(m2.run_batch(test_set[:50])[0], cpu_model.run_batch(test_set[:50])[0])


def _edited(model, edit):
    """The state of `model`'s pickle, its model JSON edited by `edit` (a data-only edit, as anyone holding the
    pickle can make)."""
    import json

    state = model.__getstate__()
    doc = json.loads(state["files"][0])
    edit(doc)
    return {**state, "files": (json.dumps(doc).encode(), state["files"][1])}


def _last_dim_x64(doc):
    doc["attrs"]["shape"][1][-1][-1] *= 64


def _head_past_the_nodes(doc):
    doc["heads"][0][0] = len(doc["nodes"]) + 5


def _wider_input(doc):
    doc["attrs"]["shape"][1][0][-1] += 1


def _precision_too_small(doc):
    doc["attrs"]["precision"][1] = [1] * len(doc["attrs"]["precision"][1])


@pytest.mark.parametrize("edit", [_last_dim_x64, _head_past_the_nodes, _wider_input, _precision_too_small])
def test_an_edited_pickle_is_verified_again_and_refused(edit):
    """F6: a pickle is model files like any other: an edit of its graph or params gives the loader's CVMError,
    never a model that runs with status 0, nor an IndexError."""
    model = DIGITS.load(device="reference")
    clone = cvmc.Model.__new__(cvmc.Model)
    with pytest.raises(cvmc.CVMError):
        clone.__setstate__(_edited(model, edit))


def test_an_edited_params_file_or_gas_in_a_pickle_is_refused_or_recomputed():
    model = DIGITS.load(device="reference")
    state = model.__getstate__()
    graph_json, params = state["files"]
    clone = cvmc.Model.__new__(cvmc.Model)
    with pytest.raises(cvmc.CVMError):  # a param shortened by one byte
        clone.__setstate__({**state, "files": (graph_json, params[:-1])})
    with pytest.raises(cvmc.CVMError):  # every param value past its precision
        clone.__setstate__({**state, "files": (graph_json, params[:-64] + b"\x7f" * 64)})
    for bad in ({"graph": model.graph, "device": "cpu"}, None, {"files": ("x", b"")}):
        with pytest.raises(cvmc.CVMRuntimeError, match="not the pickle of a cvmc Model"):
            clone.__setstate__(bad)
    again = pickle.loads(pickle.dumps(model))  # the gas is the loader's, whatever a pickle says
    assert again.gas == model.gas and again.graph.gas == model.graph.gas


@pytest.mark.parametrize(("device", "tail"), [("reference", []), ("cuda", ["kernels.cu"]),
                                              ("cpu", ["kernels.ll", "kernels.O3.ll", "kernels.s"])])
def test_dump_writes_every_stage(device, tail, tmp_path):
    from cvmc.runtime.frontend.graph import load_graph
    from cvmc.runtime.model import dump_stages

    paths = dump_stages(load_graph(DIGITS.graph, DIGITS.params), tmp_path, device)
    names = [p.split("/")[-1] for p in paths]
    stages = ["import"] if device == "reference" else \
        ["import", "cvm-mark-views", "cvm-pack-operands", "cvm-fuse", "cvm-fuse-packs", "cvm-bufferize",
         "convert-cvm-to-loops"]
    assert names == [f"{i:02d}-{s}" + ("" if "." in s else ".mlir") for i, s in enumerate(stages + tail)]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    if device == "cpu":
        assert "define" in (tmp_path / "07-kernels.ll").read_text()
        assert (tmp_path / "09-kernels.s").read_text().strip()
    if device != "reference":
        assert "cvm_sched.kernel" in (tmp_path / "03-cvm-fuse.mlir").read_text()


def test_load_model_dump(tmp_path):
    m = cvmc.load_model(DIGITS.graph, DIGITS.params, dump=tmp_path / "d")
    assert m.gas == 39850 and (tmp_path / "d" / "08-kernels.O3.ll").is_file()


def test_cvm_run_batch(tmp_path, test_set, capsys):
    np.save(tmp_path / "in.npy", test_set)
    argv = [str(DIGITS.graph), str(DIGITS.params), "--batch", str(tmp_path / "in.npy")]
    assert cvm_run.main([*argv, "-o", str(tmp_path / "out.npy")]) == 0
    assert "450 inputs in" in capsys.readouterr().err
    out = np.load(tmp_path / "out.npy")
    m = DIGITS.load(device="reference")
    assert np.array_equal(out[:20], np.stack([m.run(r)[0] for r in test_set[:20]]))
    assert cvm_run.main(argv) == 64  # no -o
    assert cvm_run.main([*argv[:3], str(tmp_path / "missing.npy"), "-o", str(tmp_path / "o.npy")]) == 2


@pytest.mark.parametrize(("device", "files"), [("cpu", ["kernels.ll", "host.mlir"]),
                                               ("cuda", ["kernels.cu", "host.mlir", "launches.json"])])
def test_cvm_run_emit_source_writes_what_the_device_compiles(device, files, tmp_path, capsys):
    argv = [str(DIGITS.graph), str(DIGITS.params), "--device", device, "--emit-source", str(tmp_path)]
    assert cvm_run.main(argv) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / f) for f in files]
    text = (tmp_path / files[0]).read_text()
    assert ("define" in text) if device == "cpu" else ("__global__" in text)


def test_cvm_run_emit_source_on_reference_is_a_usage_error(tmp_path):
    argv = [str(DIGITS.graph), str(DIGITS.params), "--device", "reference", "--emit-source", str(tmp_path)]
    assert cvm_run.main(argv) == 64


def test_repr_names_the_model_its_device_shapes_gas_and_threads(cpu_model):
    assert repr(cpu_model) == (f"Model({str(DIGITS.graph)!r}, device='cpu', input_shape=(1, 64), "
                               f"output_shapes=[(1, 10)], gas={cpu_model.gas}, threads=2)")
    from_bytes = cvmc.load_model(DIGITS.graph.read_bytes(), DIGITS.params.read_bytes(), device="reference")
    assert from_bytes.name is None and repr(from_bytes).startswith("Model(device='reference', input_shape=(1, 64)")
    b = cvmc.CvmBuilder("tiny")
    x = b.create_input([2, 3], precision=8)
    m = b.compile([b.relu(x), b.abs(x)], device="reference")
    assert repr(m) == f"Model('tiny', device='reference', input_shape=(2, 3), output_shapes=[(2, 3), (2, 3)], " \
        f"gas={m.gas}, threads={m.threads})"


def test_stats_say_compile_ms_only_when_compiled(tmp_path, monkeypatch, capsys):
    """A model whose compiled code came from the cache was not compiled: its stats give `load_ms`, and cvm-run
    --stats says so."""
    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cold = DIGITS.load(device="cpu", threads=1)
    assert cold.stats["cache_hit"] is False and "compile_ms" in cold.stats and "load_ms" not in cold.stats
    warm = DIGITS.load(device="cpu", threads=1)
    assert warm.stats["cache_hit"] is True and "load_ms" in warm.stats and "compile_ms" not in warm.stats
    assert cvm_run.main([str(DIGITS.graph), str(DIGITS.params), str(DIGITS.input), "--stats", "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "load (compiled code from the cache)" in err and "load_ms:" in err and "compile_ms" not in err
