"""`cvm-aot`: the vendored corpus through cvm-runtime's C API, served by the library `cvm-aot lib` writes and a
store `cvm-aot build` fills, called by a C program that includes c_api.h alone (tests/runtime/capi/cvm_client.c).

The store of the whole corpus (414 models) is built once per session, in this process, by the function behind
`cvm-aot build` (the command itself is tested on a few models); the client then runs every case in one process.
"""

import ctypes
import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import CVM_CORPUS, case_meta, case_params, corpus_cases

import cvmc
from cvmc.runtime.devices import aot
from cvmc.runtime.engine import store

CLIENT = Path(__file__).parent / "capi" / "cvm_client.c"
VALID = corpus_cases("op", "chain", "model")
INVALID = corpus_cases("invalid")
BENCH = CVM_CORPUS / "model_bench_resnet_000"
API = {"CVMAPILoadModel", "CVMAPIFreeModel", "CVMAPIInference", "CVMAPIGetVersion", "CVMAPIGetPreprocessMethod",
       "CVMAPIGetInputLength", "CVMAPIGetOutputLength", "CVMAPIGetInputTypeSize", "CVMAPIGetOutputTypeSize",
       "CVMAPIGetStorageSize", "CVMAPIGetGasFromModel", "CVMAPIGetGasFromGraphFile", "CVMGetLastError"}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="the C client is compiled with gcc")


def cvm_aot(*args, env=None):
    return subprocess.run([sys.executable, "-m", "cvmc.tools.cvm_aot", *map(str, args)], capture_output=True,
                          text=True, env=env)


def parse_facts(text: str) -> dict[str, dict[str, str]]:
    """The client's lines `case=NAME key=value ...` by case."""
    out = {}
    for line in text.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split(" ") if "=" in kv)
        out[fields["case"]] = fields
    return out


class Aot:
    """A library, a client built against it, a store of the whole corpus, and the client's facts per case."""

    def __init__(self, root: Path):
        self.root = root
        self.store = root / "store"
        self.env = {**os.environ, "XDG_STATE_HOME": str(root / "state"), "CVMC_AOT_STORE": str(self.store)}
        self.env.pop("CVMC_THREADS", None)
        self.facts: dict[str, dict[str, str]] = {}

    def client(self, *args, env=None, check=True) -> subprocess.CompletedProcess:
        r = subprocess.run([str(self.root / "cvm_client"), *map(str, args)], capture_output=True, text=True,
                           env=env or self.env, timeout=600)
        if check:
            assert r.returncode == 0, r.stderr[-2000:]
        return r


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("aot")
    a = Aot(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", a.env["XDG_STATE_HOME"])
        r = cvm_aot("lib", "-o", root / "libcvm.so", "--header", root / "c_api.h", env=a.env)
        assert r.returncode == 0, r.stderr
        subprocess.run(["gcc", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(root), "-o", str(root / "cvm_client"),
                        str(CLIENT), "-L", str(root), "-lcvm", f"-Wl,-rpath,{root}", "-pthread"], check=True)
        # two at a time: one model's LLVM and linker run while the other is lowered (the first alone: it creates
        # the store's key)
        first, *rest = VALID + INVALID
        aot.build_model((first / "model.json").read_bytes(), case_params(first), a.store)
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda c: aot.build_model((c / "model.json").read_bytes(), case_params(c), a.store), rest))
        out = root / "out"
        out.mkdir()
        r = a.client("--cases", out, *(VALID + INVALID))
        a.facts = parse_facts(r.stdout)
        yield a


# ---------------------------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", VALID, ids=lambda d: d.name)
def test_valid_case_through_the_c_api(built, case):
    meta = case_meta(case)
    f = built.facts[case.name]
    assert (f["load"], f["getters"], f["gas"]) == ("0", "0", str(meta["gas"]))
    assert (f["graph_status"], f["graph_gas"]) == ("0", str(meta["gas"]))  # CVMAPIGetGasFromGraphFile
    assert int(f["in_len"]) == len((case / "input.bin").read_bytes())
    assert f["version"] == meta["version"] and f["post"] == (meta["postprocess"] or "-")
    if not meta["api_output"]:  # two heads that cannot be concatenated: the API's logic error at inference
        assert f["infer"] == "1"
        return
    assert f["infer"] == "0"
    out = (built.root / "out" / f"{case.name}.bin").read_bytes()
    assert len(out) == int(f["out_len"])
    width = int(f["out_type"])
    widened = np.frombuffer(out, "i1" if width == 1 else "<i4").astype("<i4").tobytes()
    assert widened == (case / "expected_api.bin").read_bytes()


@pytest.mark.parametrize("case", INVALID, ids=lambda d: d.name)
def test_invalid_case_gets_the_runtimes_status(built, case):
    meta = case_meta(case)
    f = built.facts[case.name]
    if meta["stage"] == "load":
        assert f["load"] == str(meta["api_status"])
    else:
        assert (f["load"], f["infer"]) == ("0", str(meta["api_status"]))


def test_every_case_ran(built):
    assert set(built.facts) == {c.name for c in VALID + INVALID}


def test_the_aot_model_computes_what_the_jit_computes(built, tmp_path):
    """Random inputs (not the corpus's) give the bytes of `load_model(..., device="cpu").infer`."""
    rng = np.random.default_rng(7)
    cases = [BENCH, CVM_CORPUS / "model_digits_cnn_000", CVM_CORPUS / "chain_002"]
    folders = []
    for case in cases:
        jit = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="cpu")
        for k in range(2):
            d = tmp_path / f"{case.name}-{k}"
            d.mkdir()
            for name in ("model.json", "params.bin"):
                shutil.copyfile(case / name, d / name)
            n = int(np.prod(jit.input_shape))
            wide = jit.input_precision is not None and jit.input_precision > 8
            x = rng.integers(-(1 << 20), 1 << 20, n).astype("<i4") if wide else rng.integers(-128, 128, n).astype("i1")
            (d / "input.bin").write_bytes(x.tobytes())
            (d / "want.bin").write_bytes(jit.infer(x.tobytes()))
            folders.append(d)
    out = tmp_path / "out"
    out.mkdir()
    facts = parse_facts(built.client("--cases", out, *folders).stdout)
    for d in folders:
        assert facts[d.name]["infer"] == "0"
        assert (out / f"{d.name}.bin").read_bytes() == (d / "want.bin").read_bytes(), d.name


def test_argmax_over_two_heads_is_packed_as_cvm_runtime_packs_it(built, tmp_path):
    """SaveTensor's argmax writes ceil(R / L) slots for a head of R rows of length L (it steps its row index by L)
    and the next head's slots right after them: checked against cvm-runtime's libcvm.so on this model, whose two
    heads are [8, 3]. (`Model.infer` leaves R slots per head, so its second head lands elsewhere.)"""
    src = CVM_CORPUS / "broadcast_div_003"
    doc = json.loads((src / "model.json").read_text())
    doc["heads"], doc["postprocess"] = doc["heads"] * 2, "argmax"
    d = tmp_path / "argmax_two_heads"
    d.mkdir()
    (d / "model.json").write_text(json.dumps(doc))
    shutil.copyfile(src / "params.bin", d / "params.bin")
    (d / "input.bin").write_bytes(bytes((37 * i + 11) % 256 for i in range(len((src / "input.bin").read_bytes()))))
    store = tmp_path / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", built.env["XDG_STATE_HOME"])
        aot.build_model((d / "model.json").read_bytes(), (d / "params.bin").read_bytes(), store)
    model = cvmc.load_model(d / "model.json", d / "params.bin", device="reference")
    dtype = "<i4" if model.input_precision is not None and model.input_precision > 8 else "i1"
    heads = model.run(np.frombuffer((d / "input.bin").read_bytes(), dtype).reshape(model.input_shape))
    want = []
    for h in heads:  # model.cc:153, as written
        rows, last = h.size // h.shape[-1], h.shape[-1]
        data = h.reshape(-1).astype(np.int8)
        want += [int(np.argmax(data[i:i + last])) for i in range(0, rows, last)]
    out = tmp_path / "out"
    out.mkdir()
    facts = parse_facts(built.client("--cases", out, d, env={**built.env, "CVMC_AOT_STORE": str(store)}).stdout)
    assert facts[d.name]["out_len"] == str(4 * 2 * 8) and facts[d.name]["infer"] == "0"
    got = np.frombuffer((out / f"{d.name}.bin").read_bytes(), "<i4")
    assert got[:len(want)].tolist() == want and len(want) == 2 * 3 and not got[len(want):].any()
    assert any(want)


# ---------------------------------------------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------------------------------------------


def test_the_library_needs_no_python_and_exports_the_api(built):
    lib = built.root / "libcvm.so"
    ldd = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "python" not in ldd.lower()
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    assert {line.split()[-1] for line in nm.splitlines() if " T " in line} == API


def test_bad_arguments_get_the_runtimes_statuses(built):
    """As cvm-runtime's libcvm.so answers them (checked against it), except where it crashes: a NULL `net` to
    load into and a NULL gas pointer are status 2 here. device_type 1 is the runtime's answer without CUDA."""
    r = built.client("--edges", CVM_CORPUS / "model_digits_mlp_000")
    got = dict(line.split("=") for line in r.stdout.split())
    assert got == {
        "load_null_net": "2", "load_negative_graph_len": "1", "load_negative_params_len": "1",
        "load_device_-1": "2", "load_device_3": "2", "load_not_in_store": "2", "load_device_0": "0",
        "load_device_1": "2", "load_device_2": "0", "infer_null_net": "2", "infer_null_input": "2",
        "infer_null_output": "2", "infer_input_len_minus_1": "1", "infer_input_len_plus_1": "1",
        "infer_input_len": "0", "gas_null_out": "2", "gas_null_net": "2", "input_length_null_out": "2",
        "version_null_out": "2", "method_null_net": "2", "graph_gas_null_json": "1", "graph_gas_null_out": "2",
        "free_null": "0", "free": "0",
    }


def test_a_model_missing_from_the_store_is_status_2_naming_its_key_and_the_command(built, tmp_path):
    json_bytes = (CVM_CORPUS / "abs_000" / "model.json").read_bytes() + b" "
    (tmp_path / "model.json").write_bytes(json_bytes)
    (tmp_path / "params.bin").write_bytes(case_params(CVM_CORPUS / "abs_000"))
    r = built.client("--load", tmp_path / "model.json", tmp_path / "params.bin")
    key = aot.model_key(json_bytes, case_params(CVM_CORPUS / "abs_000"))
    assert r.stdout.startswith("load=2 ")
    assert key in r.stdout and "cvm-aot build model.json params.bin --store" in r.stdout
    assert key in r.stderr  # printed, as the runtime prints its errors


def test_no_store_named_is_status_2(built):
    env = {k: v for k, v in built.env.items() if k != "CVMC_AOT_STORE"}
    d = CVM_CORPUS / "abs_000"
    r = built.client("--load", d / "model.json", d / "params.bin", env=env)
    assert r.stdout.startswith("load=2 ") and "CVMC_AOT_STORE" in r.stdout


@pytest.mark.parametrize(("value", "status"), [("1", 0), ("256", 0), ("0", 1), ("257", 1), ("two", 1)])
def test_threads_variable_bounds(built, value, status):
    d = BENCH
    r = built.client("--load", d / "model.json", d / "params.bin", env={**built.env, "CVMC_THREADS": value})
    assert r.stdout.startswith(f"load={status} ")


@pytest.mark.parametrize("threads", ["1", "3"])
def test_thread_counts_change_no_bit(built, tmp_path, threads):
    r = built.client("--cases", tmp_path, BENCH, env={**built.env, "CVMC_THREADS": threads})
    assert parse_facts(r.stdout)["model_bench_resnet_000"]["infer"] == "0"
    out = np.frombuffer((tmp_path / "model_bench_resnet_000.bin").read_bytes(), "i1").astype("<i4").tobytes()
    assert out == (BENCH / "expected_api.bin").read_bytes()


def test_concurrent_inferences_on_distinct_and_shared_nets(built):
    r = built.client("--threads", "4", BENCH, env={**built.env, "CVMC_THREADS": "2"})
    assert r.stdout.split("\n")[:2] == ["distinct nets: equal", "one shared net: equal"]


# ---------------------------------------------------------------------------------------------------------------
# The store's trust: only what cvm-aot wrote for this key, with this user's secret, is loaded
# ---------------------------------------------------------------------------------------------------------------


def _tamper(entry: Path, other: Path, how: str) -> None:
    data = entry.read_bytes()
    entry.unlink()
    if how == "flipped byte in the object":
        entry.write_bytes(data[:-100] + bytes([data[-100] ^ 1]) + data[-99:])
    elif how == "truncated":
        entry.write_bytes(data[:len(data) // 2])
    elif how == "another model's entry":
        shutil.copyfile(other, entry)
    elif how == "a decision with a forged tag":
        entry.write_bytes(store.seal(b"x" * 32, entry.name, b"D1refused"))
    elif how == "a raw shared object":
        entry.write_bytes(data[store.HEADER_BYTES + 1:])
    elif how == "a link to a valid entry":
        os.symlink(other, entry)
    elif how == "a folder":
        entry.mkdir()
    elif how == "a fifo":
        os.mkfifo(entry)
    elif how == "a length past the file":
        entry.write_bytes(data[:len(store.MAGIC)] + (1 << 40).to_bytes(8, "little") + data[len(store.MAGIC) + 8:])


TAMPERING = ["flipped byte in the object", "truncated", "another model's entry", "a decision with a forged tag",
             "a raw shared object", "a link to a valid entry", "a folder", "a fifo", "a length past the file"]


@pytest.mark.parametrize("how", TAMPERING)
def test_an_entry_cvm_aot_did_not_write_for_this_key_is_refused(built, tmp_path, how):
    case, other = CVM_CORPUS / "conv2d_000", CVM_CORPUS / "dense_000"
    store = tmp_path / "store"
    store.mkdir()
    key = aot.model_key((case / "model.json").read_bytes(), case_params(case))
    okey = aot.model_key((other / "model.json").read_bytes(), case_params(other))
    shutil.copyfile(aot.entry_path(built.store, key), aot.entry_path(store, key))
    shutil.copyfile(aot.entry_path(built.store, okey), aot.entry_path(store, okey))
    env = {**built.env, "CVMC_AOT_STORE": str(store)}
    r = built.client("--load", case / "model.json", case / "params.bin", env=env)
    assert r.stdout.startswith("load=0 "), r.stdout  # the copy is intact
    _tamper(aot.entry_path(store, key), aot.entry_path(store, okey), how)
    r = built.client("--load", case / "model.json", case / "params.bin", env=env)
    assert r.stdout.startswith("load=2 "), r.stdout


def test_an_entry_tagged_with_another_users_secret_is_refused(built, tmp_path):
    case = CVM_CORPUS / "conv2d_000"
    env = {**built.env, "XDG_STATE_HOME": str(tmp_path / "other")}
    (tmp_path / "other" / "cvmc").mkdir(parents=True, mode=0o700)
    key_file = tmp_path / "other" / "cvmc" / "cache.key"
    key_file.write_bytes(os.urandom(32))
    key_file.chmod(0o600)
    r = built.client("--load", case / "model.json", case / "params.bin", env=env)
    assert r.stdout.startswith("load=2 ") and "was not written by cvm-aot" in r.stdout
    key_file.chmod(0o644)  # a key others may read is not used at all
    r = built.client("--load", case / "model.json", case / "params.bin", env=env)
    assert r.stdout.startswith("load=2 ") and "only this user can read" in r.stdout


def test_an_empty_home_is_unset_for_the_library_too(built):
    """F14 in C: HOME="" is not a home of "" (nor "/"): the library looks for the key in the password entry's home,
    as Python does."""
    import pwd

    env = {k: v for k, v in built.env.items() if k != "XDG_STATE_HOME"}
    d = CVM_CORPUS / "conv2d_000"
    r = built.client("--load", d / "model.json", d / "params.bin", env={**env, "HOME": ""})
    assert r.stdout.startswith("load=2 ") and "no folder for the store's secret key" not in r.stdout
    home = pwd.getpwuid(os.geteuid()).pw_dir
    assert f"{home.rstrip('/')}/.local/state/cvmc/cache.key" in r.stdout or "was not written" in r.stdout


def test_python_reads_back_what_it_wrote(built):
    case = CVM_CORPUS / "invalid_000"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", built.env["XDG_STATE_HOME"])
        payload = aot.read_entry(built.store, aot.model_key((case / "model.json").read_bytes(), case_params(case)))
    assert payload is not None and payload.startswith(b"D1")


def test_a_planted_sparse_entry_is_refused_after_its_head(built, tmp_path):
    """F5: a sparse 3 GiB entry of a model's key is refused by its head (no 3 GiB read: the client runs within 1 GiB
    of address space, where reading it whole fails otherwise)."""
    import resource

    case = CVM_CORPUS / "conv2d_000"
    key = aot.model_key((case / "model.json").read_bytes(), case_params(case))
    planted = tmp_path / "store"
    planted.mkdir()
    n = 3 << 30
    with open(aot.entry_path(planted, key), "wb") as f:
        f.write(store.MAGIC + n.to_bytes(8, "little") + bytes(64))
        f.truncate(store.HEADER_BYTES + n)

    def small():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    r = subprocess.run([str(built.root / "cvm_client"), "--load", case / "model.json", case / "params.bin"],
                       capture_output=True, text=True, env={**built.env, "CVMC_AOT_STORE": str(planted)},
                       preexec_fn=small, timeout=120)
    assert r.stdout.startswith("load=2 ") and "(its head)" in r.stdout, r.stdout


def _library(built, monkeypatch) -> ctypes.CDLL:
    """The library, in this process (its store and key from the environment, read at each call)."""
    monkeypatch.setenv("CVMC_AOT_STORE", str(built.store))
    monkeypatch.setenv("XDG_STATE_HOME", built.env["XDG_STATE_HOME"])
    lib = ctypes.CDLL(str(built.root / "libcvm.so"))
    lib.CVMAPILoadModel.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
    lib.CVMAPIInference.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    lib.CVMAPIFreeModel.argtypes = [ctypes.c_void_p]
    lib.CVMAPIGetOutputLength.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_ulonglong)]
    lib.CVMAPIGetVersion.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.CVMGetLastError.restype = ctypes.c_char_p
    return lib


def _load(lib, case: Path) -> ctypes.c_void_p:
    json_bytes, params = (case / "model.json").read_bytes(), case_params(case)
    net = ctypes.c_void_p()
    assert lib.CVMAPILoadModel(json_bytes, len(json_bytes), params, len(params), ctypes.byref(net), 0, 0) == 0
    return net


def test_a_freed_or_forged_handle_is_status_2_and_never_runs_another_model(built, monkeypatch):
    """F3: handles are looked up in a registry of live nets, with a generation per slot: a freed handle, whose
    slot a later model took, is status 2 and writes nothing, as are handles that were never returned."""
    lib = _library(built, monkeypatch)
    small, other = CVM_CORPUS / "model_digits_mlp_000", CVM_CORPUS / "dense_000"
    stale = _load(lib, small)
    x = (small / "input.bin").read_bytes()
    assert lib.CVMAPIFreeModel(stale) == 0
    for _ in range(8):
        assert lib.CVMAPIFreeModel(_load(lib, other)) == 0
    live = _load(lib, other)
    assert live.value != stale.value
    out = ctypes.create_string_buffer(b"\xaa" * 4096, 4096)
    assert lib.CVMAPIInference(stale, x, len(x), out) == 2
    assert b"was freed" in lib.CVMGetLastError() and out.raw == b"\xaa" * 4096
    length = ctypes.c_ulonglong(7)
    assert lib.CVMAPIGetOutputLength(stale, ctypes.byref(length)) == 2 and length.value == 7
    assert lib.CVMAPIGetVersion(stale, out) == 2 and lib.CVMAPIFreeModel(stale) == 2
    fake = ctypes.create_string_buffer(b"cvmc" + b"\xff" * 60)  # the old magic at a forged address
    for forged in (ctypes.addressof(fake), 1, 0xffffffff, 1 << 32, (1 << 64) - 1, live.value + 1):
        assert lib.CVMAPIGetOutputLength(ctypes.c_void_p(forged), ctypes.byref(length)) == 2, hex(forged)
        assert lib.CVMAPIFreeModel(ctypes.c_void_p(forged)) == 2
    assert lib.CVMAPIGetOutputLength(live, ctypes.byref(length)) == 0 and length.value > 0
    assert lib.CVMAPIFreeModel(live) == 0 and lib.CVMAPIFreeModel(live) == 2


def test_models_loaded_at_once_each_run_their_own_object(built, monkeypatch):
    """Found by tests/fuzz/capi.py: the library closed each model's memfd after dlopen, so the next model's memfd
    took its number, dlopen knew "/proc/self/fd/N" already and handed back the first model's object: a second model
    loaded while the first was live was refused (status 2, "built for another model")."""
    lib = _library(built, monkeypatch)
    cases = [CVM_CORPUS / n for n in ("model_digits_mlp_000", "dense_000", "conv2d_000", "model_digits_mlp_000")]
    nets = [_load(lib, case) for case in cases]
    for case, net in zip(cases, nets):
        x = (case / "input.bin").read_bytes()
        length = ctypes.c_ulonglong(0)
        assert lib.CVMAPIGetOutputLength(net, ctypes.byref(length)) == 0
        out = ctypes.create_string_buffer(length.value)
        assert lib.CVMAPIInference(net, x, len(x), out) == 0
        width = int(built.facts[case.name]["out_type"])
        widened = np.frombuffer(out.raw, "i1" if width == 1 else "<i4").astype("<i4").tobytes()
        assert widened == (case / "expected_api.bin").read_bytes(), case.name
    for net in nets:
        assert lib.CVMAPIFreeModel(net) == 0


STALE = {"freed_infer": "2", "freed_output_length": "2", "freed_version": "2", "freed_free": "2", "forged_small": "2",
         "forged_pointer": "2", "forged_max": "2", "live_infer": "0", "free_while_running": "0",
         "statuses_other_than_0_or_2": "0", "freed_again": "2"}


def test_stale_handles_and_a_free_while_running_through_the_client(built):
    """F3 from C: a handle freed before 9 more loads (its slot reused), forged ones, and a net freed while three
    threads run it (each of their calls is 0 or 2; the net goes when the last one returns)."""
    r = built.client("--stale", CVM_CORPUS / "model_digits_mlp_000", CVM_CORPUS / "dense_000")
    assert dict(line.split("=") for line in r.stdout.split()) == STALE


def test_an_object_for_a_cpu_with_features_this_one_lacks_is_refused_before_any_call(built, tmp_path, monkeypatch):
    """F4: an object built with `--cpu bdver2` (XOP, FMA4, TBM: AMD's 2012 cores, which no later CPU has) records
    those features; the library refuses it with status 2 naming them, before any kernel runs."""
    import llvmlite.binding as llvm

    if not llvm.get_process_triple().startswith("x86_64"):
        pytest.skip("x86-64 only")
    monkeypatch.setenv("XDG_STATE_HOME", built.env["XDG_STATE_HOME"])
    case = CVM_CORPUS / "dense_000"
    planted = tmp_path / "store"
    aot.build_model((case / "model.json").read_bytes(), case_params(case), planted, cpu="bdver2")
    r = built.client("--load", case / "model.json", case / "params.bin",
                     env={**built.env, "CVMC_AOT_STORE": str(planted)}, check=False)
    assert r.returncode == 0 and r.stdout.startswith("load=2 "), r.stdout
    assert "bdver2" in r.stdout and "xop" in r.stdout and "refused before any call" in r.stdout


@pytest.mark.parametrize("cpu", ["i686", "pentium4", "nosuchcpu"])
def test_a_cpu_that_is_not_an_x86_64_one_is_refused_with_a_message(built, tmp_path, cpu):
    """F4: no "LLVM ERROR: 64-bit code requested", no exit 1 without a word of cvm-aot's."""
    case = CVM_CORPUS / "dense_000"
    r = cvm_aot("build", case / "model.json", case / "params.bin", "--store", tmp_path, "--cpu", cpu, env=built.env)
    assert r.returncode == 2 and f"--cpu {cpu}: not a CPU cvm-aot can compile for" in r.stderr, r.stderr
    assert "LLVM ERROR" not in r.stderr and not list(tmp_path.iterdir())


def test_cvm_aot_lib_writes_through_no_planted_link(built, tmp_path):
    """F1: `libcvm.so.tmp` (and any other name) planted as a link to a file of another user's is not written
    through, and `libcvm.so` ends a regular file of the library's bytes; the header likewise."""
    theirs = tmp_path / "theirs.so"
    theirs.write_bytes(b"their library")
    for name in ("libcvm.so.tmp", "c_api.h.tmp"):
        os.symlink(theirs, tmp_path / name)
    r = cvm_aot("lib", "-o", tmp_path / "libcvm.so", "--header", tmp_path / "c_api.h", env=built.env)
    assert r.returncode == 0, r.stderr
    assert theirs.read_bytes() == b"their library"
    for name in ("libcvm.so", "c_api.h"):
        assert not (tmp_path / name).is_symlink()
    assert (tmp_path / "libcvm.so").read_bytes()[:4] == b"\x7fELF"
    assert (tmp_path / "c_api.h").read_bytes() == (aot.CAPI / "c_api.h").read_bytes()
    assert (tmp_path / "libcvm.so").stat().st_mode & 0o777 == 0o755


def test_the_library_checks_the_features_python_records(built):
    """The names `cvm-aot build --cpu` records are the names the library's table checks (capi/cpu.c)."""
    names = aot.checked_features()
    assert {"avx512f", "avx2", "xop", "fma4", "tbm", "sse4.1", "lzcnt"} <= names and len(names) > 80
    assert set(aot.named_cpu_features("bdver2").replace("+", "").split(",")) <= names


# ---------------------------------------------------------------------------------------------------------------
# The C parts, against Python's hashlib and hmac and cvmc.runtime.devices.aot
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def c_store(tmp_path_factory):
    """store.c and sha256.c alone, as a library for ctypes (cvmc_fail is the library's: a stub here)."""
    root = tmp_path_factory.mktemp("capi")
    stub = root / "stub.c"
    stub.write_text("int cvmc_fail(int status, const char *format, ...) { (void)format; return status; }\n")
    lib = root / "store.so"
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(lib), str(stub),
                    str(aot.CAPI / "store.c"), str(aot.CAPI / "sha256.c"), "-ldl"], check=True)
    return ctypes.CDLL(str(lib))


# Every length around the 55/56 padding boundary and the 64-byte block, some blocks, and a large message.
LENGTHS = [*range(0, 130), 191, 192, 193, 1000, 4096, (1 << 20) + 3]


def test_sha256_equals_hashlib(c_store):
    rng = np.random.default_rng(1)
    for n in LENGTHS:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        out = ctypes.create_string_buffer(32)
        c_store.cvmc_sha256(data, ctypes.c_size_t(n), out)
        assert out.raw == hashlib.sha256(data).digest(), n


def test_sha256_in_pieces_equals_hashlib(c_store):
    data = bytes(range(256)) * 9
    state = ctypes.create_string_buffer(256)  # larger than struct cvmc_sha256
    c_store.cvmc_sha256_init(state)
    at = 0
    for piece in (0, 1, 63, 64, 65, 7, 0, 300, 1000):
        c_store.cvmc_sha256_update(state, data[at:at + piece], ctypes.c_size_t(piece))
        at += piece
    out = ctypes.create_string_buffer(32)
    c_store.cvmc_sha256_final(state, out)
    assert out.raw == hashlib.sha256(data[:at]).digest()


@pytest.mark.parametrize("key_len", [0, 1, 32, 63, 64, 65, 200])
def test_hmac_equals_pythons(c_store, key_len):
    key = bytes((7 * i + 3) % 256 for i in range(key_len))
    for n in (0, 1, 64, 1000):
        data = bytes(range(256))[:n % 256] * (n // 256 + 1)
        state = ctypes.create_string_buffer(512)
        c_store.cvmc_hmac_init(state, key, ctypes.c_size_t(key_len))
        c_store.cvmc_hmac_update(state, data, ctypes.c_size_t(len(data)))
        out = ctypes.create_string_buffer(32)
        c_store.cvmc_hmac_final(state, out)
        assert out.raw == hmac.new(key, data, hashlib.sha256).digest()


@pytest.mark.parametrize(("json_bytes", "params"), [(b"", b""), (b"{}", b""), (b"a", b"bc"), (b"ab", b"c"),
                                                    (b'{"x": 1}\0tail', bytes(range(256)))])
def test_store_keys_equal_pythons(c_store, json_bytes, params):
    key = ctypes.create_string_buffer(65)
    c_store.cvmc_model_key(json_bytes, ctypes.c_size_t(len(json_bytes)), params, ctypes.c_size_t(len(params)), key)
    assert key.value.decode() == aot.model_key(json_bytes, params)
    text = json_bytes.split(b"\0")[0]  # the library passes the graph's C string
    c_store.cvmc_graph_key(text, ctypes.c_size_t(len(text)), key)
    assert key.value.decode() == aot.graph_key(json_bytes)


def test_keys_of_two_files_never_run_together():
    """The lengths are hashed: moving a byte from one file to the other changes the key."""
    assert aot.model_key(b"ab", b"c") != aot.model_key(b"a", b"bc")
    assert aot.graph_key(b"{}\0x") == aot.graph_key(b"{}") != aot.graph_key(b"{} ")


# ---------------------------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------------------------


def test_cvm_aot_build_prints_what_it_wrote(built, tmp_path):
    store = tmp_path / "store"
    valid, invalid = CVM_CORPUS / "model_digits_mlp_000", CVM_CORPUS / "invalid_000"
    r = cvm_aot("build", valid / "model.json", valid / "params.bin", "--store", store, env=built.env)
    assert r.returncode == 0, r.stderr
    key = aot.model_key((valid / "model.json").read_bytes(), (valid / "params.bin").read_bytes())
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{aot.entry_path(store, key)}: model {key}: a shared object of ")
    assert lines[1].endswith(f"gas {case_meta(valid)['gas']}")
    r = cvm_aot("build", invalid / "model.json", invalid / "params.bin", "--store", store, env=built.env)
    assert r.returncode == 0, r.stderr
    assert "rejected with status 1: " in r.stdout.splitlines()[0]
    facts = parse_facts(built.client("--cases", tmp_path, valid, invalid,
                                     env={**built.env, "CVMC_AOT_STORE": str(store)}).stdout)
    assert facts["model_digits_mlp_000"]["infer"] == "0" and facts["invalid_000"]["load"] == "1"
    assert re.fullmatch(r"[0-9a-f]{64}\.cvmc", sorted(p.name for p in store.iterdir())[0])


def test_a_model_built_for_a_named_cpu_gives_the_same_bytes(built, tmp_path):
    """`--cpu x86-64` (the baseline every x86-64 CPU runs): the int16 kernels instead of the host's, same bytes."""
    import llvmlite.binding as llvm

    if not llvm.get_process_triple().startswith("x86_64"):
        pytest.skip("x86-64 only")
    store = tmp_path / "store"
    r = cvm_aot("build", BENCH / "model.json", BENCH / "params.bin", "--store", store, "--cpu", "x86-64",
                env=built.env)
    assert r.returncode == 0, r.stderr
    assert "for cpu x86-64" in r.stdout
    r = built.client("--cases", tmp_path, BENCH, env={**built.env, "CVMC_AOT_STORE": str(store)})
    assert parse_facts(r.stdout)[BENCH.name]["infer"] == "0"
    out = np.frombuffer((tmp_path / f"{BENCH.name}.bin").read_bytes(), "i1").astype("<i4").tobytes()
    assert out == (BENCH / "expected_api.bin").read_bytes()
    assert cvm_aot("build", "m.json", "p.bin", "--store", store, "--cpu", "x86 64", env=built.env).returncode == 64


@pytest.mark.skipif(shutil.which("go") is None, reason="Go is not installed (the cgo example is optional)")
def test_the_cgo_example_calls_the_api_as_a_node_does(built, tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "cgo"
    env = {**built.env, "CGO_ENABLED": "1", "CGO_CFLAGS": f"-I{built.root}", "GOCACHE": str(tmp_path / "cache"),
           "CGO_LDFLAGS": f"-L{built.root} -Wl,-rpath,{built.root}", "GOFLAGS": "-mod=mod", "GOPATH": str(tmp_path)}
    r = subprocess.run(["go", "build", "-o", str(tmp_path / "infer"), "."], cwd=example, env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    valid, invalid = CVM_CORPUS / "model_digits_mlp_000", CVM_CORPUS / "invalid_000"
    r = subprocess.run([str(tmp_path / "infer"), *(valid / n for n in ("model.json", "params.bin", "input.bin"))],
                       capture_output=True, env=built.env)
    assert r.returncode == 0 and r.stdout == (valid / "expected_api.bin").read_bytes()  # argmax: int32
    assert f"gas {case_meta(valid)['gas']}" in r.stderr.decode()
    r = subprocess.run([str(tmp_path / "infer"), *(invalid / n for n in ("model.json", "params.bin", "input.bin"))],
                       capture_output=True, env=built.env)
    assert r.returncode == 1 and b"CVMAPILoadModel: status 1" in r.stderr


def test_cvm_aot_usage_and_unreadable_files(built, tmp_path):
    assert cvm_aot("build", "m.json", "p.bin", env=built.env).returncode == 64  # no --store
    r = cvm_aot("build", tmp_path / "missing.json", tmp_path / "missing.bin", "--store", tmp_path, env=built.env)
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr
    assert cvm_aot("lib", env=built.env).returncode == 64  # no -o
    r = cvm_aot("lib", "-o", tmp_path / "no" / "such" / "libcvm.so", env=built.env)
    assert r.returncode == 2 and "does not exist" in r.stderr


# ---------------------------------------------------------------------------------------------------------------
# Against cvm-runtime's own library (when it is built: tests/consensus/ORACLE.md)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not os.environ.get("CVMC_ORACLE_LIBCVM"),
                    reason="set CVMC_ORACLE_LIBCVM to cvm-runtime's libcvm.so to compare with it")
def test_the_client_sees_what_it_sees_with_cvm_runtimes_library(built, tmp_path):
    """The same client, linked with cvm-runtime's libcvm.so (FORMAL): every status, gas, length, type size,
    storage size and output byte is the same (the version is not: cvm-runtime hands back an unwritten buffer)."""
    lib = Path(os.environ["CVMC_ORACLE_LIBCVM"])
    client = tmp_path / "oracle_client"
    subprocess.run(["gcc", "-O1", "-DNO_LAST_ERROR", "-I", str(aot.CAPI), "-o", str(client), str(CLIENT),
                    "-L", str(lib.parent), "-lcvm", f"-Wl,-rpath,{lib.parent}", "-pthread"], check=True)
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([str(client), "--cases", str(out), *map(str, VALID + INVALID)], capture_output=True,
                       env={**os.environ, "CVM_DEVICE": "2"}, timeout=1200)
    assert r.returncode == 0
    theirs = parse_facts(re.sub(r" version=.*? post=", " post=", r.stdout.decode("latin-1")))
    for name, f in theirs.items():
        ours = {k: v for k, v in built.facts[name].items() if k != "version"}
        assert ours == f, name
        if f.get("infer") == "0":
            assert (out / f"{name}.bin").read_bytes() == (built.root / "out" / f"{name}.bin").read_bytes(), name
