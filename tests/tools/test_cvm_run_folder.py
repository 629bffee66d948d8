"""cvm-run with a model folder and .npy inputs (issue 39): `cvm-run net/ x.npy` reads ints or floats (with
quantize.json) and writes the heads as .npy, printing the path; `-o` is written as named (`scores.bin` was
`scores.bin.npy`); swapped files, a folder without the files and an explicit --threads above the CPUs are named."""

import json
import shutil

import numpy as np
import pytest

import cvmc
import cvmc.examples
from cvmc.runtime.engine.threads import usable_cpus
from cvmc.tools import cvm_run

CNN = cvmc.examples.digits_cnn()


@pytest.fixture(scope="module")
def ints():
    return CNN.test_set()[0][:5]


@pytest.fixture(scope="module")
def model():
    return cvmc.load_model(CNN.folder, device="reference")


def test_a_float_npy_through_the_folder(tmp_path, ints, model, capsys):
    scale = json.loads(CNN.quantize_json.read_text())["input_scale"]
    np.save(tmp_path / "x.npy", (ints[0] * scale).astype(np.float32))
    assert cvm_run.main([str(CNN.folder), str(tmp_path / "x.npy"), "--device", "reference"]) == 0
    out = tmp_path / "x.out.npy"
    assert capsys.readouterr().out.split() == [str(out)]
    got = np.load(out)
    assert got.dtype == np.float64 and np.array_equal(got, model.quantization.decode(model.run(ints[0]))[0])


def test_an_int_stack_through_the_folder_to_a_named_file(tmp_path, ints, model, capsys):
    np.save(tmp_path / "xs.npy", ints)
    out = tmp_path / "scores.bin"
    assert cvm_run.main([f"{CNN.folder}/", str(tmp_path / "xs.npy"), "-o", str(out), "--device", "reference"]) == 0
    assert capsys.readouterr().out.split() == [str(out)] and not (tmp_path / "scores.bin.npy").exists()
    assert np.array_equal(np.load(out), model.run_batch(ints)[0])


def test_batch_writes_the_name_given_and_prints_it(tmp_path, ints, capsys):
    np.save(tmp_path / "xs.npy", ints)
    out = tmp_path / "scores.bin"
    assert cvm_run.main([str(CNN.graph), str(CNN.params), "--batch", str(tmp_path / "xs.npy"), "-o", str(out),
                         "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split() == [str(out)] and not (tmp_path / "scores.bin.npy").exists()
    assert np.load(out).shape == (5, 1, 10)
    assert "(1 thread)" in captured.err and "threads)" not in captured.err


def test_swapped_files_are_a_usage_error(tmp_path, capsys):
    assert cvm_run.main([str(CNN.params), str(CNN.graph), str(tmp_path / "in.bin")]) == 64
    err = capsys.readouterr().err
    assert "the files are swapped: cvm-run model.json params.bin, the graph first" in err


def test_a_folder_without_the_files_and_a_lone_file(tmp_path, capsys):
    assert cvm_run.main([str(tmp_path), "x.npy"]) == 2
    assert "expected model.json and params.bin in it" in capsys.readouterr().err
    assert cvm_run.main([str(CNN.graph)]) == 64
    assert "is not a folder: name the model folder, or model.json then params.bin" in capsys.readouterr().err


def test_floats_without_quantize_json_get_the_hint(tmp_path, ints, capsys):
    shutil.copytree(CNN.folder, tmp_path / "net")
    (tmp_path / "net" / "quantize.json").unlink()
    np.save(tmp_path / "x.npy", ints[0].astype(np.float32))
    assert cvm_run.main([str(tmp_path / "net"), str(tmp_path / "x.npy"), "--device", "reference"]) == 1
    assert "this model has no scales" in capsys.readouterr().err


def test_a_wrongly_shaped_npy_names_both_shapes(tmp_path, ints, capsys):
    np.save(tmp_path / "x.npy", ints[0].reshape(1, 8, 8, 1))
    assert cvm_run.main([str(CNN.folder), str(tmp_path / "x.npy"), "--device", "reference"]) == 1
    assert "of shape [1, 1, 8, 8]" in capsys.readouterr().err


def test_threads_above_the_cpus_warn(tmp_path, ints, capsys):
    cpus = len(usable_cpus())
    np.save(tmp_path / "xs.npy", ints)
    args = [str(CNN.folder), "--batch", str(tmp_path / "xs.npy"), "-o", str(tmp_path / "o.npy"), "--device",
            "reference"]
    assert cvm_run.main([*args, "--threads", str(cpus)]) == 0
    assert "warning" not in capsys.readouterr().err  # at the bound
    assert cvm_run.main([*args, "--threads", str(cpus + 1)]) == 0  # one past it: taken, with a warning
    assert f"--threads {cpus + 1} is more than the {cpus} CPU" in capsys.readouterr().err


def test_a_cache_warning_is_one_line(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "file").write_text("")
    env = {**os.environ, "CVMC_CACHE_DIR": str(tmp_path / "file" / "sub")}
    r = subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_run", str(cvmc.examples.digits().folder), "--gas"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "39850"
    assert r.stderr.splitlines() == [f"cvmc: warning: cvmc cache: the cache folder {tmp_path / 'file' / 'sub'} "
                                     f"cannot be created: Not a directory; running uncached"]


def test_emit_source_of_a_folder_gives_a_host_mlir_that_parses(tmp_path, capsys):
    from cvmc.tools import cvm_opt

    assert cvm_run.main([str(cvmc.examples.digits().folder), "--emit-source", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / "kernels.ll"), str(tmp_path / "host.mlir")]
    assert cvm_opt.main([str(tmp_path / "host.mlir"), "-o", str(tmp_path / "again.mlir")]) == 0
    assert "func.func @main" in (tmp_path / "again.mlir").read_text()
    assert cvm_opt.main([str(tmp_path / "host.mlir"), "-t", "llvm-ir", "-o", str(tmp_path / "k.ll")]) == 0


def test_cvm_translate_takes_a_folder(tmp_path, capsys):
    from cvmc.tools import cvm_translate

    d = cvmc.examples.digits()
    assert cvm_translate.main(["--import-cvm", str(d.folder), "-o", str(tmp_path / "a.mlir")]) == 0
    assert cvm_translate.main(["--import-cvm", str(d.graph), str(d.params), "-o", str(tmp_path / "b.mlir")]) == 0
    assert (tmp_path / "a.mlir").read_text() == (tmp_path / "b.mlir").read_text()
    assert cvm_translate.main(["--import-cvm", str(d.params), str(d.graph)]) == 64
    assert "the files are swapped" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cvm_translate.main(["--import-cvm", str(d.graph), str(d.params), str(d.input)])
    assert e.value.code == 64
