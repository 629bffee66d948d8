"""The on-disk cache: only code cvmc wrote for this key on this account is run; a folder others may write is
refused; no home is no error; the size bound evicts the least recently used entries; `cvm-cache`."""

import hashlib
import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import cvmc
from cvmc.codegen.llvm import emit_llvm, kernel_specs, parse_loop_level
from cvmc.runtime.engine import cache, store
from cvmc.runtime.engine.cache import Cache, CacheWarning, open_cache
from cvmc.runtime.engine.jit import JitEngine
from cvmc.runtime.engine.store import HEADER_BYTES
from cvmc.tools import cvm_cache

# out[i] = a[i] * K + b[i]: two kernels of one name and signature that compute different things.
SCALE = """
func.func @scale(%a: memref<16xi32>, %b: memref<16xi32>, %out: memref<16xi32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 16 : index
  %k = arith.constant {k} : i32
  "scf.parallel"(%c0, %n, %c1) <{{operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> ({{
  ^bb0(%i: index):
    %x = memref.load %a[%i] : memref<16xi32>
    %y = memref.load %b[%i] : memref<16xi32>
    %x3 = arith.muli %x, %k : i32
    %s = arith.addi %x3, %y : i32
    memref.store %s, %out[%i] : memref<16xi32>
    scf.reduce
  }}) : (index, index, index) -> ()
  func.return
}}"""

A = np.arange(16, dtype=np.int32) - 5
B = np.arange(16, dtype=np.int32) * 7


def kernel(k: int):
    module = parse_loop_level(SCALE.format(k=k))
    return str(emit_llvm(module)), kernel_specs(module)


def run_scale(engine: JitEngine) -> np.ndarray:
    out = np.zeros(16, np.int32)
    engine["scale"](A, B, out)
    return out


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A private cache folder and key folder for the test; warnings of earlier tests forgotten."""
    path = tmp_path / "cache"
    monkeypatch.setenv("CVMC_CACHE_DIR", str(path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("CVMC_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(cache, "_warned", set())
    return path


def entry_of(folder: Path, engine: JitEngine) -> Path:
    """The entry of the engine's code: its shared object (kind "so", where the system links one) or its object
    files (kind "o")."""
    path = folder / f"{engine.key}.{engine.kind}"
    assert path.is_file()
    return path


# --------------------------------------------------------------------------------------------------------------
# Trust: what is run is what cvmc wrote for this key
# --------------------------------------------------------------------------------------------------------------


def test_folder_and_key_are_private(folder, tmp_path):
    ir3, specs3 = kernel(3)
    JitEngine(ir3, specs3)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    key = tmp_path / "state" / "cvmc" / "cache.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert not list(folder.glob("*.key"))  # the secret is not kept next to the entries


def test_another_kernels_object_under_this_key_is_refused(folder):
    ir3, specs3 = kernel(3)
    ir5, specs5 = kernel(5)
    three, five = JitEngine(ir3, specs3), JitEngine(ir5, specs5)
    np.testing.assert_array_equal(run_scale(three), A * 3 + B)
    np.testing.assert_array_equal(run_scale(five), A * 5 + B)
    # A valid entry of cvmc's, renamed: its tag binds its own name, so it is deleted and compiled again.
    entry_of(folder, three).write_bytes(entry_of(folder, five).read_bytes())
    again = JitEngine(ir3, specs3)
    assert not again.cache_hit
    np.testing.assert_array_equal(run_scale(again), A * 3 + B)
    assert JitEngine(ir3, specs3).cache_hit  # the rewritten entry is good


def test_planted_objects_are_refused(folder):
    ir3, specs3 = kernel(3)
    ir5, specs5 = kernel(5)
    three = JitEngine(ir3, specs3)
    path = entry_of(folder, three)
    planted_code = entry_of(folder, JitEngine(ir5, specs5)).read_bytes()[HEADER_BYTES:]
    forged = store.seal(b"k" * 32, path.name, planted_code)
    plants = {
        "the old format (magic and the SHA-256 of the content)": b"cvmc-obj-1\n" + hashlib.sha256(planted_code)
        .digest() + planted_code,
        "a tag made with another secret": forged,
        "a good head, a payload of another": path.read_bytes()[:HEADER_BYTES] + planted_code[:len(path.read_bytes())
                                                                                           - HEADER_BYTES],
        "a raw object": planted_code,
        "a truncated entry": path.read_bytes()[:100],
        "an empty file": b"",
    }
    for what, data in plants.items():
        path.unlink(missing_ok=True)
        path.write_bytes(data)
        engine = JitEngine(ir3, specs3)
        assert not engine.cache_hit, what
        np.testing.assert_array_equal(run_scale(engine), A * 3 + B, err_msg=what)
        assert path.read_bytes() != data, what  # replaced by a good entry


def test_links_fifos_and_folders_in_place_of_an_entry_are_refused(folder, tmp_path):
    ir3, specs3 = kernel(3)
    path = entry_of(folder, JitEngine(ir3, specs3))
    good = tmp_path / "good.o"
    good.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(good)  # even a link to a valid entry: entries are plain files
    assert not JitEngine(ir3, specs3).cache_hit
    assert not path.is_symlink() and good.exists()
    path.unlink()
    os.mkfifo(path)  # opening it must not block
    assert not JitEngine(ir3, specs3).cache_hit
    assert stat.S_ISREG(path.stat().st_mode)
    path.unlink()
    (path / "inner").mkdir(parents=True)  # a folder would block the rewrite: it goes too
    assert not JitEngine(ir3, specs3).cache_hit
    assert stat.S_ISREG(path.stat().st_mode)
    assert JitEngine(ir3, specs3).cache_hit


def dense_model():
    builder = cvmc.CvmBuilder("net")
    x = builder.create_input([1, 8], precision=8)
    w = builder.create_param(np.arange(64, dtype=np.int32).reshape(8, 8) - 30, precision=8, name="w")
    y = builder.cvm_right_shift(builder.dense(x, w, units=8, use_bias=False), precision=8, shift_bit=3)
    data = np.arange(8, dtype=np.int32).reshape(1, 8) * 9 - 30
    return builder, y, data, builder.compile([y], device="reference").run(data)


def model_entries(folder: Path, model) -> dict[str, Path]:
    """The model's two entries: its compiled model (kind "model") and its kernels' code ("o": a shared object or
    object files, `entry_of`)."""
    paths = {"model": folder / f"{model._run.model_key}.model", "o": entry_of(folder, model._run.engine)}
    assert all(p.is_file() for p in paths.values())
    return paths


def no_compile(monkeypatch):
    from cvmc.runtime.devices import cpu
    from cvmc.runtime.engine import llvm_compile

    def refuse(*args, **kwargs):
        raise AssertionError("compiled on a warm load")

    monkeypatch.setattr(cpu, "lower_to_llvm", refuse)
    monkeypatch.setattr(llvm_compile, "_optimized", refuse)


def test_a_warm_load_lowers_nothing_and_is_exact(folder, monkeypatch):
    builder, y, data, want = dense_model()
    cold = builder.compile([y], device="cpu")
    assert cold.stats["lowered"] and not cold.stats["cache_hit"]
    no_compile(monkeypatch)
    warm = cvmc.Model(builder.graph([y]), "cpu", threads=2)  # threads change how code runs, not the code
    assert warm.stats["cache_hit"] and not warm.stats["lowered"] and warm.stats["lower_ms"] == 0
    assert "load_ms" in warm.stats and "compile_ms" not in warm.stats
    assert warm.stats["kernels"] == cold.stats["kernels"] and warm.memory_bytes == cold.memory_bytes
    assert all(np.array_equal(a, b) for a, b in zip(warm.run(data), want, strict=True))
    # the entry holds the host program and the packed weights: what the model needs besides code
    packed = model_entries(folder, warm)["model"].read_bytes()
    assert b'"arena_bytes"' in packed and b'"calls"' in packed


def test_the_memory_limit_holds_on_a_warm_load(folder):
    builder, y, _, _ = dense_model()
    needed = builder.compile([y], device="cpu").memory_bytes
    assert needed is not None
    assert cvmc.Model(builder.graph([y]), "cpu", max_memory=needed).stats["cache_hit"]  # at the bound
    with pytest.raises(cvmc.CVMLogicError, match="working memory"):
        cvmc.Model(builder.graph([y]), "cpu", max_memory=needed - 1)  # one past it


@pytest.mark.parametrize("kind", ["model", "o"])
def test_a_tampered_entry_of_a_model_is_deleted_and_the_model_still_exact(folder, kind):
    builder, y, data, want = dense_model()
    cold = builder.compile([y], device="cpu")
    assert not cold.stats["cache_hit"]
    entry = model_entries(folder, cold)[kind]
    raw = bytearray(entry.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    entry.write_bytes(bytes(raw))
    model = builder.compile([y], device="cpu")
    assert model.stats["lowered"]  # (the kernels' objects, when intact, still come from their own entry)
    assert not model.stats["cache_hit"] or kind == "model"
    assert all(np.array_equal(a, b) for a, b in zip(model.run(data), want))
    assert entry.read_bytes() != bytes(raw)  # written again
    assert builder.compile([y], device="cpu").stats["cache_hit"]


def test_planted_model_entries_are_refused(folder):
    builder, y, data, want = dense_model()
    path = model_entries(folder, builder.compile([y], device="cpu"))["model"]
    good = path.read_bytes()
    payload = good[HEADER_BYTES:]
    plants = {
        "a tag made with another secret": store.seal(b"k" * 32, path.name, payload),
        "a raw payload": payload,
        "a truncated entry": good[:len(good) // 2],
        "an empty file": b"",
    }
    for what, data_ in plants.items():
        path.write_bytes(data_)
        model = builder.compile([y], device="cpu")
        assert model.stats["lowered"], what
        assert all(np.array_equal(a, b) for a, b in zip(model.run(data), want)), what
        assert path.read_bytes() != data_, what


def test_another_models_object_under_this_models_key_is_refused(folder):
    def model(op: str):
        b = cvmc.CvmBuilder("net")
        x = b.create_input([2, 3], precision=8)
        return b, (b.relu(x) if op == "relu" else b.negative(x))

    data = np.array([[1, -2, 3], [-4, 5, -6]], np.int32)
    b1, y1 = model("relu")
    relu = model_entries(folder, b1.compile([y1], device="cpu"))
    b2, y2 = model("negative")
    neg = model_entries(folder, b2.compile([y2], device="cpu"))
    for kind in ("o", "model"):  # a valid entry of cvmc's, renamed: its tag binds its own name
        saved = relu[kind].read_bytes()
        relu[kind].write_bytes(neg[kind].read_bytes())
        again = b1.compile([y1], device="cpu")
        assert again.stats["lowered"] and (kind == "model" or not again.stats["cache_hit"]), kind
        np.testing.assert_array_equal(again.run(data)[0], np.maximum(data, 0))
        assert relu[kind].read_bytes() == saved  # written again


def test_the_entry_is_read_strictly():
    """Anything but an entry of this form is no compiled model (a miss), never an exception or a guess."""
    from cvmc.codegen.abi import KernelArg, KernelSpec
    from cvmc.runtime.driver.host import Call, HostProgram, View
    from cvmc.runtime.engine.compiled import CompiledModel, decode, encode

    view = View("arena", 0, "i32", (4,), (1,), 0)
    program = HostProgram(16, (4,), [Call("k", (View("input", 0, "i32", (4,), (1,), 0), view), 4)], [view], 16,
                          {"w": np.arange(3, dtype=np.int8)})
    spec = KernelSpec("k", (KernelArg((4,), "i32", (1,), 0, False), KernelArg((4,), "i32", (1,), 0, True)), 1, False)
    good = encode(CompiledModel("x86:avx2", program, [spec], "0" * 64, {"input": np.ones(4, np.int32)}))
    back = decode(good)
    assert back is not None and back.program.calls == program.calls and back.specs == [spec]
    assert back.program.globals["w"].tolist() == [0, 1, 2] and back.extras["input"].tolist() == [1] * 4
    assert decode(good + b"\0") is None  # a byte left over
    assert decode(good[:-1]) is None  # a byte missing
    assert decode(b"cvmc-model-0\n" + good[13:]) is None  # another version's form
    for old, new in ((b'"arena_bytes":16', b'"arena_bytes":-1'), (b'"arena_bytes":16', b'"arena_bytes":"16"'),
                     (b'"objects":"' + b"0" * 64, b'"objects":"' + b"0" * 63 + b"g"), (b'"i32"', b'"f16"')):
        assert old in good
        head_len = int.from_bytes(good[13:21], "little")
        bad = good.replace(old, new, 1)
        bad = bad[:13] + (head_len + len(new) - len(old)).to_bytes(8, "little") + bad[21:]
        assert decode(bad) is None, new


WARM = """
import sys, numpy as np, cvmc
m = cvmc.load_model(sys.argv[1], sys.argv[2])
print(m.stats["lowered"], m.run(np.arange(8).reshape(1, 8) * 9 - 30)[0].tolist(),
      sorted({n.split(".")[0] for n in sys.modules if n.split(".")[0] in ("xdsl", "cvmc", "llvmlite")}))
"""


def test_a_warm_load_model_imports_no_xdsl_and_no_llvm(folder, tmp_path):
    """A fresh process that finds the model in the cache imports no xDSL (nor the passes, nor the compile driver)
    and runs it exactly; where the system links shared objects, it imports no LLVM either (llvmlite)."""
    from cvmc.runtime.engine import jit, llvm_compile
    from cvmc.runtime.frontend.graph_writer import save_graph

    builder, y, data, want = dense_model()
    save_graph(builder.graph([y]), tmp_path / "m")
    files = [str(tmp_path / "m" / "model.json"), str(tmp_path / "m" / "params.bin")]
    env = {**os.environ, "CVMC_CACHE_DIR": str(folder), "XDG_STATE_HOME": str(tmp_path / "state")}
    runs = [subprocess.run([sys.executable, "-X", "importtime", "-c", WARM, *files], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    imported = [{line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time")}
                for r in runs]
    assert any(m.startswith("xdsl") for m in imported[0])  # cold: lowered
    compiler = ("xdsl", "cvmc.passes.pipelines", "cvmc.codegen.llvm", "cvmc.runtime.driver.compile",
                "cvmc.runtime.frontend.cvm_ir")
    assert not {m for m in imported[1] if any(m == c or m.startswith(f"{c}.") for c in compiler)}
    # of the passes and the printers, a run needs the target's form and the kernels' ABI, nothing else
    assert {m for m in imported[1] if m.startswith(("cvmc.passes", "cvmc.codegen"))} <= {
        "cvmc.passes", "cvmc.passes.loops", "cvmc.passes.loops.target", "cvmc.codegen", "cvmc.codegen.abi"}
    shared = jit.shared_loading() and llvm_compile.linker() is not None
    outs = [r.stdout.strip() for r in runs]
    assert outs[0].endswith("['cvmc', 'llvmlite', 'xdsl']")
    if shared:  # the code, the scheduler and the known-answer check's kernels: shared objects, no LLVM
        assert not {m for m in imported[1] if m.split(".")[0] == "llvmlite" or m == "cvmc.runtime.engine.llvm_compile"}
        assert outs[1].endswith("['cvmc']")  # cvmc.passes: only Target
    else:
        assert outs[1].endswith("['cvmc', 'llvmlite']")
    assert outs[0].startswith("True ") and outs[1].startswith("False ")  # lowered, then not
    assert str(want[0].tolist()) in runs[1].stdout


# --------------------------------------------------------------------------------------------------------------
# Folders that are not this user's alone, no home, no room
# --------------------------------------------------------------------------------------------------------------


def compile_twice_uncached(warned: list) -> None:
    ir3, specs3 = kernel(3)
    for _ in range(2):
        engine = JitEngine(ir3, specs3)
        assert not engine.cache_hit
        np.testing.assert_array_equal(run_scale(engine), A * 3 + B)
    assert len([w for w in warned if issubclass(w.category, CacheWarning)]) == 1, [str(w.message) for w in warned]


def test_a_folder_others_may_write_is_refused_with_one_warning(folder):
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o777)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compile_twice_uncached(warned)
    assert "mode 0777" in str(warned[0].message) and "uncached" in str(warned[0].message)
    assert not list(folder.iterdir())
    assert cvm_cache.main(["clear"]) == 1  # the tool touches nothing there either


def test_a_group_writable_key_folder_is_refused(folder, tmp_path):
    keys = tmp_path / "state" / "cvmc"
    keys.mkdir(parents=True, mode=0o700)
    os.chmod(keys, 0o770)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compile_twice_uncached(warned)
    assert "cache key folder" in str(warned[0].message)


def test_a_key_others_can_read_is_refused(folder, tmp_path):
    keys = tmp_path / "state" / "cvmc"
    keys.mkdir(parents=True, mode=0o700)
    (keys / "cache.key").write_bytes(b"s" * 32)
    os.chmod(keys / "cache.key", 0o644)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compile_twice_uncached(warned)
    assert "cache.key" in str(warned[0].message)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_folder_of_another_user_is_refused(folder):
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compile_twice_uncached(warned)
    assert "owned by uid 65534" in str(warned[0].message)


def test_no_home_runs_uncached(monkeypatch):
    for name in ("HOME", "CVMC_CACHE_DIR", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cache, "_home", lambda: None)  # no passwd entry either
    monkeypatch.setattr(cache, "_warned", set())
    assert cache.default_dir() is None
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compile_twice_uncached(warned)
    assert "no home directory" in str(warned[0].message)


def test_home_unset_and_unusable_home_are_not_errors(tmp_path):
    """In a fresh process, with HOME unset and with a HOME where no folder can be made: the model runs, with one
    warning where the cache is off."""
    code = ("import cvmc, numpy as np; b = cvmc.CvmBuilder('n'); x = b.create_input([1, 4], precision=8); "
            "m = b.compile([b.relu(x)], device='cpu'); print(m.run(np.array([[1, -2, 3, -4]]))[0].tolist())")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CVMC_", "XDG_")) and k != "HOME"}
    private = tmp_path / "c"
    cases = [({**base, "HOME": "/dev/null"}, 1),
             ({**base, "CVMC_CACHE_DIR": str(private), "XDG_STATE_HOME": str(tmp_path / "s")}, 0)]
    for env, warnings_expected in cases:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[[1, 0, 3, 0]]"
        assert done.stderr.count("CacheWarning") == warnings_expected, done.stderr
    assert len(list(private.glob("*.model"))) >= 1  # the model's entry (and the known-answer check's)


def test_an_unwritable_folder_is_not_an_error(folder, monkeypatch):
    ir3, specs3 = kernel(3)
    monkeypatch.setenv("CVMC_CACHE_DIR", "/dev/null/cvmc")
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compile_twice_uncached(warned)
    assert "cannot be created" in str(warned[0].message)


# --------------------------------------------------------------------------------------------------------------
# The size bound
# --------------------------------------------------------------------------------------------------------------


def names(n: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]


def entry_bytes(payload: int) -> int:
    return HEADER_BYTES + payload


def test_eviction_at_the_bound_and_one_past_it(folder):
    folder.mkdir(mode=0o700)
    size = entry_bytes(55)
    store = Cache(folder, b"s" * 32, 3 * size)
    a, b, c, d = names(4)
    for i, name in enumerate((a, b, c)):
        store.put(name, "o", bytes([i]) * 55)
        os.utime(folder / f"{name}.o", ns=(10**18 + i, 10**18 + i))  # a, b, c from oldest to newest
    assert store.info()["bytes"] == 3 * size  # at the bound: nothing goes
    assert all(store.get(n, "o") is not None for n in (a, c))  # a and c used again: b is the least recent
    assert {p.stem for p, _ in store.entries()} == {a, b, c}
    one_past = Cache(folder, b"s" * 32, 3 * size - 1)
    assert one_past.evict() == 1
    assert {p.stem for p, _ in store.entries()} == {a, c}
    store.put(d, "o", b"d" * 55)  # back at the bound with a, c, d
    assert {p.stem for p, _ in store.entries()} == {a, c, d}
    for i, name in enumerate((a, c, d)):
        os.utime(folder / f"{name}.o", ns=(10**18 + i, 10**18 + i))
    store.put(b, "o", b"e" * 55)  # past the bound: the least recent goes, and no more than needed
    assert {p.stem for p, _ in store.entries()} == {c, d, b}
    store.put(a, "o", b"f" * 56)  # one byte bigger: c and d would leave 3 * size + 1, so both go
    assert {p.stem for p, _ in store.entries()} == {b, a}
    assert store.get(b, "o") == b"e" * 55 and store.get(a, "o") == b"f" * 56


def test_an_entry_larger_than_the_bound_is_not_kept(folder):
    folder.mkdir(mode=0o700)
    store = Cache(folder, b"s" * 32, entry_bytes(10))
    (a, b) = names(2)
    store.put(a, "o", b"x" * 10)  # exactly the bound
    store.put(b, "o", b"x" * 11)  # one past
    assert [p.stem for p, _ in store.entries()] == [a]


@pytest.mark.parametrize(("text", "expected"), [("", cache.DEFAULT_MAX_BYTES), ("4096", 4096), ("1K", 1024),
                                                ("3M", 3 << 20), ("2g", 2 << 30), ("0", 0)])  # fmt: skip
def test_the_bound_from_the_environment(monkeypatch, text, expected):
    monkeypatch.setenv("CVMC_CACHE_MAX_BYTES", text)
    assert cache.max_bytes() == expected


def test_a_bad_bound_warns_and_keeps_the_default(monkeypatch):
    monkeypatch.setenv("CVMC_CACHE_MAX_BYTES", "lots")
    monkeypatch.setattr(cache, "_warned", set())
    with pytest.warns(CacheWarning, match="CVMC_CACHE_MAX_BYTES"):
        assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES


def test_a_zero_bound_turns_the_cache_off(folder, monkeypatch):
    monkeypatch.setenv("CVMC_CACHE_MAX_BYTES", "0")
    assert open_cache() is None
    ir3, specs3 = kernel(3)
    JitEngine(ir3, specs3)
    assert not JitEngine(ir3, specs3).cache_hit


def test_the_bound_applies_to_compiles(folder, monkeypatch):
    ir3, specs3 = kernel(3)
    ir5, specs5 = kernel(5)
    JitEngine(ir3, specs3)
    (first,) = folder.iterdir()
    monkeypatch.setenv("CVMC_CACHE_MAX_BYTES", str(first.stat().st_size + 10))
    os.utime(first, ns=(10**18, 10**18))
    JitEngine(ir5, specs5)
    assert not first.exists() and len(list(folder.iterdir())) == 1


# --------------------------------------------------------------------------------------------------------------
# Processes sharing a folder
# --------------------------------------------------------------------------------------------------------------

RACE = """
import sys
import numpy as np
from cvmc.codegen.llvm import emit_llvm, kernel_specs, parse_loop_level
from cvmc.runtime.engine.jit import JitEngine
module = parse_loop_level(sys.stdin.read())
engine = JitEngine(str(emit_llvm(module)), kernel_specs(module))
a, b = np.arange(16, dtype=np.int32) - 5, np.arange(16, dtype=np.int32) * 7
out = np.zeros(16, np.int32)
engine["scale"](a, b, out)
print(bool((out == a * 3 + b).all()))
"""


def test_processes_racing_on_a_fresh_folder_agree(folder, tmp_path):
    env = {**os.environ, "CVMC_CACHE_DIR": str(folder), "XDG_STATE_HOME": str(tmp_path / "state")}
    procs = [subprocess.Popen([sys.executable, "-c", RACE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]  # fmt: skip
    outs = [p.communicate(SCALE.format(k=3), timeout=300) for p in procs]
    assert [o.strip() for o, _ in outs] == ["True"] * 4, outs
    assert all("Warning" not in e for _, e in outs), outs
    ir3, specs3 = kernel(3)
    hit = JitEngine(ir3, specs3)
    assert hit.cache_hit  # all agreed on one key
    # one entry of code and the machine's (LLVM's answer about this CPU), no temporaries left
    assert sorted(p.suffix for p in folder.iterdir()) == sorted([f".{hit.kind}", ".host"])


# --------------------------------------------------------------------------------------------------------------
# cvm-cache
# --------------------------------------------------------------------------------------------------------------


def test_cvm_cache_info_and_clear(folder, tmp_path, capsys):
    assert cvm_cache.main(["info"]) == 0
    assert "entries: 0" in capsys.readouterr().out
    for k in (3, 5):
        JitEngine(*kernel(k))
    total = sum(p.stat().st_size for p in folder.iterdir())
    n = len(list(folder.iterdir()))  # the two kernels' code (and LLVM's answer about this CPU, when asked here)
    assert n in (2, 3)
    assert cvm_cache.main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"folder: {folder}" in out and f"entries: {n}" in out and f"bytes: {total} " in out
    assert cvm_cache.main(["clear"]) == 0
    assert f"removed {n} entries" in capsys.readouterr().out
    assert not list(folder.iterdir())
    assert (tmp_path / "state" / "cvmc" / "cache.key").exists()  # the key stays
    assert cvm_cache.main(["info"]) == 0 and "entries: 0" in capsys.readouterr().out


def test_cvm_cache_usage_errors_exit_64(folder):
    for argv in ([], ["bogus"], ["info", "extra"]):
        with pytest.raises(SystemExit) as e:
            cvm_cache.main(argv)
        assert e.value.code == 64


def test_cvm_cache_command_line(folder, tmp_path):
    env = {**os.environ, "CVMC_CACHE_DIR": str(folder), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_cache", "info"], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and "entries: 0" in done.stdout, done.stderr


def test_fuzzer_round_of_planted_and_tampered_entries(folder, capsys):
    from cvmc.tools import fuzz_cvm

    n = len(fuzz_cvm.CACHE_ATTACKS)
    assert fuzz_cvm.main(["--count", str(n), "--seed", "11", "--ops", "4", "--cache-attacks"]) == 0
    out = capsys.readouterr().out
    assert f"{n} planted or tampered cache entries, 0 failures" in out, out
    assert not list(folder.glob("*.saved"))


def test_a_program_of_other_shapes_under_this_name_is_never_used(folder, monkeypatch):
    """Defence in depth: were two graphs given one name (a bug, never a collision), the entry of the other, of
    other input or head shapes, is a miss, not a program for this graph."""
    from cvmc.runtime.engine import compiled

    monkeypatch.setattr(compiled, "model_key", lambda graph, target: "ab" * 32)

    def relu(n: int):
        b = cvmc.CvmBuilder("net")
        return b, b.relu(b.create_input([1, n], precision=8))

    b4, y4 = relu(4)
    assert b4.compile([y4], device="cpu").stats["lowered"]
    b6, y6 = relu(6)
    six = b6.compile([y6], device="cpu")
    assert six.stats["lowered"]
    np.testing.assert_array_equal(six.run(np.arange(6).reshape(1, 6) - 3)[0], [[0, 0, 0, 0, 1, 2]])


# --------------------------------------------------------------------------------------------------------------
# Shared objects (kind "so"): loaded with dlopen from the verified bytes, never from a path
# --------------------------------------------------------------------------------------------------------------


def links_shared() -> bool:
    from cvmc.runtime.engine import jit, llvm_compile

    return jit.shared_loading() and llvm_compile.linker() is not None


needs_linker = pytest.mark.skipif(not links_shared(), reason="no system linker (ld) or no memfd: code goes to MCJIT")


def memfd_mappings() -> set[str]:
    """The memfd objects mapped into this process (/proc/self/maps names them `/memfd:NAME (deleted)`)."""
    with open("/proc/self/maps") as f:
        return {line.split()[-2] for line in f if "/memfd:cvmc-" in line}


@needs_linker
def test_code_is_a_shared_object_loaded_from_a_sealed_memfd(folder):
    ir3, specs3 = kernel(3)
    cold = JitEngine(ir3, specs3)
    assert cold.kind == "so" and not cold.cache_hit
    payload = entry_of(folder, cold).read_bytes()[HEADER_BYTES:]
    assert payload.startswith(b"cvmc-shared-1\n") and payload[18:22] == b"\x7fELF"
    warm = JitEngine(ir3, specs3)
    assert warm.cache_hit and warm.kind == "so"
    np.testing.assert_array_equal(run_scale(warm), A * 3 + B)
    code = warm._shared
    assert code is not None and f"/memfd:cvmc-{warm.key[:16]}" in memfd_mappings()
    import fcntl

    seals = fcntl.fcntl(code.fd, fcntl.F_GET_SEALS)
    assert seals & fcntl.F_SEAL_WRITE and seals & fcntl.F_SEAL_SEAL  # nothing changes the code once checked
    with pytest.raises(OSError):
        os.write(code.fd, b"\x90")


@needs_linker
def test_a_freed_engine_unloads_its_object_and_closes_its_memfd(folder):
    import gc

    ir3, specs3 = kernel(3)
    JitEngine(ir3, specs3)
    engine = JitEngine(ir3, specs3)
    assert engine._shared is not None
    fd, path, key = engine._shared.fd, engine._shared.path, engine.key
    del engine
    gc.collect()
    try:
        now = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        now = None
    assert now is None or f"memfd:cvmc-{key[:16]}" not in now  # closed (its number free, or another file's)
    for _ in range(3):  # loaded again and again under the same /proc/self/fd name: each load its own code
        again = JitEngine(ir3, specs3)
        np.testing.assert_array_equal(run_scale(again), A * 3 + B)
        five = JitEngine(*kernel(5))
        np.testing.assert_array_equal(run_scale(five), A * 5 + B)
        del again, five
        gc.collect()
    assert path.startswith("/proc/self/fd/")


@needs_linker
def test_planted_shared_objects_are_refused(folder):
    from cvmc.runtime.engine.jit import _pack_shared

    ir3, specs3 = kernel(3)
    path = entry_of(folder, JitEngine(ir3, specs3))
    five = JitEngine(*kernel(5))
    foreign = entry_of(folder, five).read_bytes()[HEADER_BYTES:]  # another kernel's shared object, with its magic
    plants = {
        "a raw shared object": foreign[18:],
        "a raw entry payload": foreign,
        "a tag made with another secret": store.seal(b"k" * 32, path.name, foreign),
        "another entry renamed": entry_of(folder, five).read_bytes(),
        "a good head, another payload": path.read_bytes()[:HEADER_BYTES] + foreign[:len(path.read_bytes())
                                                                                  - HEADER_BYTES],
    }
    for what, data in plants.items():
        path.write_bytes(data)
        engine = JitEngine(ir3, specs3)
        assert not engine.cache_hit, what
        np.testing.assert_array_equal(run_scale(engine), A * 3 + B, err_msg=what)
        assert path.read_bytes() != data, what  # replaced by a good entry
    # sealed with this user's key (as only cvmc writes) but not a loadable object: compiled again, never run
    store_ = open_cache()
    assert store_ is not None
    for what, payload in {"not an ELF file": b"cvmc-shared-1\n\x01\0\0\0" + b"MZ" * 64,
                          "a broken ELF file": _pack_shared(b"\x7fELF" + bytes(200), 1),
                          "no parts": b"cvmc-shared-1\n\0\0\0\0" + foreign[18:]}.items():
        store_.put(path.stem, "so", payload)
        engine = JitEngine(ir3, specs3)
        assert not engine.cache_hit, what
        np.testing.assert_array_equal(run_scale(engine), A * 3 + B, err_msg=what)


def test_without_a_linker_the_code_goes_to_mcjit(folder, monkeypatch):
    from cvmc.runtime.engine import llvm_compile

    monkeypatch.setattr(llvm_compile, "linker", lambda: None)
    ir3, specs3 = kernel(3)
    cold = JitEngine(ir3, specs3)
    warm = JitEngine(ir3, specs3)
    assert (cold.kind, warm.kind, cold.cache_hit, warm.cache_hit) == ("o", "o", False, True)
    np.testing.assert_array_equal(run_scale(warm), A * 3 + B)


def test_a_failing_link_falls_back_to_mcjit(folder, monkeypatch):
    from cvmc.runtime.engine import llvm_compile

    monkeypatch.setattr(llvm_compile, "linker", lambda: "/bin/false")
    ir3, specs3 = kernel(3)
    engine = JitEngine(ir3, specs3)
    assert engine.kind == "o" and not engine.cache_hit
    np.testing.assert_array_equal(run_scale(engine), A * 3 + B)


# --------------------------------------------------------------------------------------------------------------
# LLVM's answer about this CPU (kind "host")
# --------------------------------------------------------------------------------------------------------------


def test_the_machines_answer_is_llvms_and_a_planted_one_is_refused(folder, monkeypatch):
    import json

    import llvmlite.binding as llvm

    from cvmc.runtime.driver import target

    real = target._llvm_host()
    assert real[:3] == (llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())
    identity = target._machine_identity()
    if identity is None:
        pytest.skip("no /proc/cpuinfo: LLVM is asked in every process")
    assert b"cpu MHz" not in identity and b"bogomips" not in identity  # what moves is no part of it
    name = hashlib.sha256(identity).hexdigest()
    monkeypatch.setattr(target, "host_target", target.host_target.__wrapped__)  # not the process's cached answer
    assert target.host_target() == real
    path = folder / f"{name}.host"
    assert json.loads(path.read_bytes()[HEADER_BYTES:]) == ["cvmc-host-1", *real]
    asked = []
    monkeypatch.setattr(target, "_llvm_host", lambda: asked.append(1) or real)
    assert target.host_target() == real and not asked  # read back: LLVM not asked
    lie = json.dumps(["cvmc-host-1", real[0], "sapphirerapids", "+amx-int8,+amx-tile,+avx512vnni", *real[3:]])
    for what, data in {"a tag made with another secret": store.seal(b"k" * 32, path.name, lie.encode()),
                       "a raw answer": lie.encode(), "an empty file": b""}.items():
        path.write_bytes(data)
        assert target.host_target() == real, what
        assert asked, what
        asked.clear()
    store_ = open_cache()
    assert store_ is not None
    for payload in (b"not json", b'["cvmc-host-0", "a", "b", "c", "d", "e"]', b'["cvmc-host-1", 1, 2, 3, 4, 5]',
                    b'{"cpu": "znver3"}'):  # sealed by this user, yet not of this form: asked again
        store_.put(name, "host", payload)
        assert target.host_target() == real, payload
        assert asked, payload
        asked.clear()
