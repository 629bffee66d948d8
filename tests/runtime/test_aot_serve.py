"""AOT from Python (issue 39): `cvmc.load_model(..., store=DIR)` / `cvmc.aot.load` serve a stored entry through
the C library, with no compiler imported (no xdsl, no llvmlite), and the library's checks: a model not in the
store, a tampered entry, a bad input length, a closed model."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cvmc
import cvmc.examples

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="the C library is compiled with the system's cc")

DIGITS = cvmc.examples.digits()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("aot-serve")
    env_state = root / "state"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(env_state))  # the store's key lives there
        from cvmc.runtime.devices import aot

        aot.write_library(root / "libcvm.so")
        aot.build_model(DIGITS.graph.read_bytes(), DIGITS.params.read_bytes(), root / "store")
        yield root, {"XDG_STATE_HOME": str(env_state)}


def test_served_from_the_store_as_the_jit_runs_it(built, monkeypatch):
    root, env = built
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    m = cvmc.aot.load(DIGITS.folder, store=root / "store", library=root / "libcvm.so")
    jit = DIGITS.load(device="reference")
    x = DIGITS.input.read_bytes()
    assert m.gas == jit.gas and m.input_bytes == 64
    assert m.infer(x) == jit.infer(x)
    digits = DIGITS.test_set()[0][:5]
    for row in digits:
        assert m.run(row).tobytes() == jit.infer(row.astype(np.int8).tobytes())
    with pytest.raises(cvmc.CVMLogicError, match="expected 64 input bytes, got 63"):
        m.infer(x[:63])
    with pytest.raises(cvmc.CVMLogicError, match="expected an integer input"):
        m.run(np.zeros(64, np.float32))
    m.close()
    with pytest.raises(cvmc.CVMLogicError, match="closed"):
        m.infer(x)


def test_load_model_with_store_and_a_model_not_stored(built, monkeypatch, tmp_path):
    root, env = built
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CVMC_AOT_LIB", str(root / "libcvm.so"))
    m = cvmc.load_model(DIGITS.graph, DIGITS.params, store=root / "store")
    assert type(m).__name__ == "AotModel" and "store=" in repr(m)
    cnn = cvmc.examples.digits_cnn()
    with pytest.raises(cvmc.CVMRuntimeError, match="CVMAPILoadModel"):
        cvmc.load_model(cnn.folder, store=root / "store")  # built for no entry in this store
    with pytest.raises(cvmc.CVMRuntimeError, match="not a folder"):
        cvmc.load_model(DIGITS.folder, store=tmp_path / "nowhere")


def test_a_tampered_entry_is_refused(built, monkeypatch, tmp_path):
    root, env = built
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    store = tmp_path / "store"
    shutil.copytree(root / "store", store)
    for entry in store.rglob("*.cvmc"):
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 1
        entry.write_bytes(bytes(data))
    with pytest.raises(cvmc.CVMRuntimeError, match="CVMAPILoadModel"):
        cvmc.aot.load(DIGITS.folder, store=store, library=root / "libcvm.so")


def test_no_compiler_is_imported(built):
    root, env = built
    code = textwrap.dedent(f"""
        import sys, cvmc, cvmc.examples
        d = cvmc.examples.digits()
        m = cvmc.load_model(d.folder, store={str(root / 'store')!r})
        assert len(m.infer(d.input.read_bytes())) == 4
        print(sorted(k for k in ("xdsl", "llvmlite", "cvmc.passes", "cvmc.codegen") if k in sys.modules))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, **env, "CVMC_AOT_LIB": str(root / "libcvm.so")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
