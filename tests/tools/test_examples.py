"""The bundled examples (cvmc.examples, cvm-examples) and the tools' common flags (--version, -v)."""

import subprocess
import sys

import numpy as np
import pytest

import cvmc
import cvmc.examples
from cvmc.examples import main as examples_main


def test_digits_loads_and_agrees_with_the_runtime():
    d = cvmc.examples.digits()
    for p in (d.graph, d.params, d.input, d.inputs, d.labels, d.oracle):
        assert p.is_file(), p
    m = d.load(device="reference")
    assert m.gas == 39850
    x, labels = d.test_set()
    oracle = d.oracle_predictions()
    preds = [int(np.frombuffer(m.infer(row.tobytes()), "<i4")[0]) for row in x[:20]]
    assert preds == oracle[:20].tolist()
    assert labels.shape == oracle.shape == (450,)


def test_lenet_files_and_license():
    lenet = cvmc.examples.lenet()
    assert lenet.graph.is_file() and lenet.input.stat().st_size == 4096
    assert "Apache License" in lenet.license.read_text()
    assert lenet.expected().shape == (10,)


def test_cvm_examples_tool(capsys):
    assert examples_main([]) == 0
    assert capsys.readouterr().out.split()[0] == "digits"
    assert examples_main(["path", "lenet"]) == 0
    assert capsys.readouterr().out.strip() == str(cvmc.examples.lenet().folder)
    assert examples_main(["files", "digits"]) == 0
    assert str(cvmc.examples.digits().graph) in capsys.readouterr().out.splitlines()
    with pytest.raises(SystemExit) as e:
        examples_main(["path", "nothing"])
    assert e.value.code == 64


def test_version_attribute():
    from importlib.metadata import version

    assert cvmc.__version__ == version("cvmc")


def test_verbose_logs_through_logging():
    d = cvmc.examples.digits()
    r = subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_run", str(d.graph), str(d.params), str(d.input),
                        "-v", "--device", "reference"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "5"
    assert "cvmc" in r.stderr and "load" in r.stderr
