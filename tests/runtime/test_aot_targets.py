"""`cvm-aot build --target`: objects that know their CPU (issue 23, items 3 and 4).

One store holds a model for several targets (`<key>.<target>.cvmc`); an object of `--target all` holds the amx,
avx512-vnni, avx2 and generic kernels, and the library runs the best tier this CPU has whose known-answer check
passes. `CVMC_CPU_MASK` (read by capi/cpu.c) hides features of this CPU, so that every tier of one object runs
here; `CVMC_AOT_VERBOSE=1` makes the library name the tier each load runs.
"""

import re
import shutil
import subprocess

import numpy as np
import pytest
from conftest import CVM_CORPUS, case_params
from hosts import real_has  # the library runs in its own process, on the real CPU
from test_aot import CLIENT, Aot, cvm_aot, parse_facts

from cvmc.runtime.devices import aot

CASES = [CVM_CORPUS / "model_digits_cnn_000", CVM_CORPUS / "model_bench_resnet_000"]
BEST = next(t for t in ("amx", "avx512-vnni", "avx2", "generic") if t == "generic" or real_has(t))

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="the C client is compiled with gcc"),
    pytest.mark.skipif(not real_has("avx2"), reason="the tiers are run on an x86-64 CPU with AVX2 at least"),
]


class Stores(Aot):
    def build(self, case, target, store, plant=None) -> None:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("XDG_STATE_HOME", self.env["XDG_STATE_HOME"])
            mp.setattr(aot, "PLANT", plant)
            aot.build_model((case / "model.json").read_bytes(), case_params(case), self.root / store, target=target)

    def run(self, store, *cases, mask="", out=None):
        """(the client's facts by case, its stderr, the tiers it ran in order)."""
        out = out or self.root / "out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        env = {**self.env, "CVMC_AOT_STORE": str(self.root / store), "CVMC_CPU_MASK": mask, "CVMC_AOT_VERBOSE": "1"}
        r = self.client("--cases", out, *cases, env=env)
        tiers = re.findall(r"^cvmc: model [0-9a-f]{64}: target (\S+), tier (\S+) ", r.stderr, re.MULTILINE)
        return parse_facts(r.stdout), r.stderr, tiers


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("aot-targets")
    a = Stores(root)
    r = cvm_aot("lib", "-o", root / "libcvm.so", "--header", root / "c_api.h", env=a.env)
    assert r.returncode == 0, r.stderr
    subprocess.run(["gcc", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(root), "-o", str(root / "cvm_client"),
                    str(CLIENT), "-L", str(root), "-lcvm", f"-Wl,-rpath,{root}", "-pthread"], check=True)
    for case in CASES:
        a.build(case, "all", "all")
    return a


def same_bytes(lab, facts, case) -> bool:
    f = facts[case.name]
    out = (lab.root / "out" / f"{case.name}.bin").read_bytes()
    widened = np.frombuffer(out, "i1" if f["out_type"] == "1" else "<i4").astype("<i4").tobytes()
    return f["infer"] == "0" and widened == (case / "expected_api.bin").read_bytes()


# The mask, and the tier an object of --target all then runs on this CPU: a mask naming one feature a tier needs
# refuses it (at the bound); one naming a feature no better tier needs changes nothing (one past it).
def _below(tier: str) -> str:
    order = ("generic", "avx2", "avx512-vnni", "amx")
    return next(t for t in reversed(order[:order.index(tier)]) if t == "generic" or real_has(t))


MASKS = {
    "": BEST,
    "amx-int8": _below("amx") if BEST == "amx" else BEST,
    "amx-tile": _below("amx") if BEST == "amx" else BEST,
    "avx512vnni": "avx2",
    "avx512bw": "avx2",
    "avx512vnni,avx2": "generic",
    "avx2": "generic",
    "fma": "generic",
    "xop,fma4,tbm": BEST,  # features no tier needs
}


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: m or "none")
def test_one_all_object_runs_each_tier_with_the_same_bytes(lab, mask):
    facts, stderr, tiers = lab.run("all", *CASES, mask=mask)
    assert tiers == [("all", MASKS[mask])] * len(CASES), stderr
    for case in CASES:
        assert same_bytes(lab, facts, case), case.name
    assert "WARNING" not in stderr


def test_the_best_tier_here_is_the_hosts(lab):
    """On a CPU with AVX512-VNNI and no AMX (the Zen 5 this was written on) the vnni tier runs."""
    _, _, tiers = lab.run("all", CASES[0])
    assert tiers == [("all", BEST)]
    if real_has("avx512-vnni") and not real_has("amx"):
        assert BEST == "avx512-vnni"


@pytest.mark.parametrize("mask", ["bogus", "avx2,", ",", "avx2,nosuch", "AVX2"])
def test_a_mask_naming_no_checked_feature_refuses_every_load(lab, mask):
    facts, stderr, _ = lab.run("all", CASES[0], mask=mask)
    assert facts[CASES[0].name]["load"] == "2"
    assert "CVMC_CPU_MASK" in stderr


def test_an_amx_object_without_amx_tiles_is_status_2_naming_the_features(lab):
    """No SIGILL: the object is refused before any call. On an AMX host the mask takes AMX-INT8 away."""
    lab.build(CASES[0], "amx", "amx")
    for mask in ("amx-int8", "" if not real_has("amx") else "amx-int8,amx-tile"):
        facts, stderr, tiers = lab.run("amx", CASES[0], mask=mask)
        assert facts[CASES[0].name]["load"] == "2" and tiers == []
        assert "amx tier amx" in stderr and "amx-int8" in stderr and "refused before any call" in stderr
        if mask != "amx-int8":
            assert "amx-tile" in stderr


def test_x86_64_v3_and_v4_objects_run_the_avx2_tier_where_their_level_is(lab):
    case = CASES[0]
    for target, needs in (("x86-64-v3", "avx2"), ("x86-64-v4", "avx512f")):
        lab.build(case, target, target)
        if not real_has("avx512-vnni") and target == "x86-64-v4":
            continue
        facts, _, tiers = lab.run(target, case)
        assert tiers == [(target, "avx2")] and same_bytes(lab, facts, case)
        facts, stderr, _ = lab.run(target, case, mask=needs)  # its level, less one feature
        assert facts[case.name]["load"] == "2" and f"needs features this CPU lacks (or this library cannot " \
            f"check): {needs}" in stderr
    facts, _, tiers = lab.run("x86-64-v3", case, mask="avx512f")  # a feature of the level above: still runs
    assert tiers == [("x86-64-v3", "avx2")] and same_bytes(lab, facts, case)


def test_each_target_has_its_own_entry_and_the_library_takes_the_first_that_runs(lab):
    """host, all, amx, x86-64-v4, x86-64-v3: an entry whose tiers this CPU lacks is passed over for the next."""
    case = CASES[0]
    for target in ("x86-64-v3", "all", "host"):
        lab.build(case, target, "several")
    key = aot.model_key((case / "model.json").read_bytes(), case_params(case))
    names = sorted(p.name for p in (lab.root / "several").iterdir() if p.name.startswith(key))
    assert names == [f"{key}.{t}.cvmc" for t in ("all", "host", "x86-64-v3")]
    assert lab.run("several", case)[2] == [("host", BEST)]
    if BEST in ("avx512-vnni", "amx"):  # the host's object needs AVX512-VNNI: passed over for all's avx2 tier
        facts, _, tiers = lab.run("several", case, mask="avx512vnni")
        assert tiers == [("all", "avx2")] and same_bytes(lab, facts, case)
    aot.entry_path(lab.root / "several", key, "host").unlink()
    assert lab.run("several", case)[2] == [("all", BEST)]
    aot.entry_path(lab.root / "several", key, "all").unlink()
    assert lab.run("several", case, mask="avx512f")[2] == [("x86-64-v3", "avx2")]
    facts, stderr, _ = lab.run("several", case, mask="avx2")
    assert facts[case.name]["load"] == "2" and "x86-64-v3 tier avx2" in stderr


def test_the_lookup_order_is_the_librarys():
    text = (aot.CAPI / "capi.c").read_text()
    listed = re.search(r"targets\[\] = \{([^}]*)\}", text)
    assert listed is not None
    assert tuple(re.findall(r'"([^"]+)"', listed.group(1))) == aot.LOOKUP_ORDER
    assert set(aot.LOOKUP_ORDER) == set(aot.TARGET_NAMES)


@pytest.mark.parametrize(("level", "cpu"), [(aot._X86_64, "x86-64"), (aot._V3, "x86-64-v3"), (aot._V4, "x86-64-v4")])
def test_the_levels_are_the_psabis(level, cpu):
    """The features recorded for each level are those `cc -march=LEVEL` enables (with what every x86-64 has)."""
    gcc = set(aot.named_cpu_features(cpu).replace("+", "").split(","))
    assert set(level) - {"64bit", "cmov", "cx8"} == gcc
    assert set(level) <= aot.checked_features()


def test_a_tier_compiles_with_no_checked_feature_it_does_not_record():
    for target in ("x86-64-v3", "x86-64-v4", "amx", "all"):
        for tier in aot.target_tiers(target):
            assert tier.features is not None
            plus = {f[1:] for f in tier.features.split(",") if f.startswith("+")}
            assert plus == set(tier.needs.replace("+", "").split(","))
            minus = {f[1:] for f in tier.features.split(",") if f.startswith("-")}
            assert not plus & minus and "amx-int8" in plus | minus and "xop" in minus


# ---------------------------------------------------------------------------------------------------------------
# The known-answer check at load
# ---------------------------------------------------------------------------------------------------------------


def wrong_pmadd(tier: str, ir: str) -> str:
    """The avx2 tier with a wrong `vpmaddubsw` (the u8 x s8 micro-kernel's; the known-answer model takes it):
    lane 0 of every product one too large."""
    call = 'call <16 x i16> @"llvm.x86.avx2.pmadd.ub.sw"('
    if tier != "avx2" or call not in ir:
        return ir
    one = ", ".join(["i16 1"] + ["i16 0"] * 15)
    return ir.replace(call, 'call <16 x i16> @"cvmc_planted"(') + (
        '\ndefine internal <16 x i16> @"cvmc_planted"(<32 x i8> %a, <32 x i8> %b) {\n'
        '  %r = call <16 x i16> @"llvm.x86.avx2.pmadd.ub.sw"(<32 x i8> %a, <32 x i8> %b)\n'
        f'  %w = add <16 x i16> %r, <{one}>\n  ret <16 x i16> %w\n}}\n')


def test_a_planted_wrong_kernel_fails_the_check_and_the_next_tier_runs(lab):
    """The avx2 tier of an `all` object built with a wrong kernel: where it would run (AVX-512 masked), it fails
    its known-answer check, one warning names it, and the generic tier gives the right bytes, for every model
    loaded in that process."""
    lab.build(CASES[0], "all", "planted", plant=wrong_pmadd)
    lab.build(CASES[1], "all", "planted", plant=wrong_pmadd)
    facts, stderr, tiers = lab.run("planted", *CASES, mask="avx512f")
    assert tiers == [("all", "generic")] * 2
    assert all(same_bytes(lab, facts, case) for case in CASES)
    assert stderr.count("WARNING") == 1 and "the avx2 kernels" in stderr and "avx2 is disabled" in stderr
    facts, stderr, tiers = lab.run("planted", *CASES)  # unmasked: the host's best tier
    if BEST in ("avx2", "generic"):  # an AVX2-only host runs the planted tier itself: the same fall back
        assert tiers == [("all", "generic")] * 2 and stderr.count("WARNING") == (BEST == "avx2")
    else:  # a tier above it: no check of avx2 runs
        assert "WARNING" not in stderr and tiers == [("all", BEST)] * 2


def test_an_object_whose_only_tier_fails_the_check_is_refused(lab):
    lab.build(CASES[0], "x86-64-v3", "planted-v3", plant=wrong_pmadd)
    facts, stderr, _ = lab.run("planted-v3", CASES[0])
    assert facts[CASES[0].name]["load"] == "2"
    assert "x86-64-v3 tier avx2 failed the known-answer check" in stderr and "refused before any call" in stderr


# ---------------------------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------------------------


def test_cvm_aot_build_target(lab, tmp_path):
    case = CASES[0]
    r = cvm_aot("build", case / "model.json", case / "params.bin", "--store", tmp_path, "--target", "all",
                env=lab.env)
    assert r.returncode == 0, r.stderr
    key = aot.model_key((case / "model.json").read_bytes(), case_params(case))
    assert r.stdout.startswith(f"{aot.entry_path(tmp_path, key, 'all')}: model {key}: a shared object of ")
    assert "for target all (tiers amx, avx512-vnni, avx2, generic)" in r.stdout
    for bad in (["--target", "x86-64-v5"], ["--target", "all", "--cpu", "x86-64"], ["--target", "ALL"]):
        r = cvm_aot("build", case / "model.json", case / "params.bin", "--store", tmp_path, *bad, env=lab.env)
        assert r.returncode == 64 and ("--target" in r.stderr or "--cpu" in r.stderr), r.stderr


def test_an_entry_renamed_to_another_target_is_refused(lab, tmp_path):
    """The target is in the entry's name, which its tags cover: an `all` entry copied to the host's name is status
    2 (the library does not go on to other entries), as is a host entry copied to the name of `all`."""
    case = CASES[0]
    key = aot.model_key((case / "model.json").read_bytes(), case_params(case))
    for target in ("all", "host"):
        lab.build(case, target, "renamed")
    for src, dst in (("all", "host"), ("host", "all")):
        store = tmp_path / f"{src}-as-{dst}"
        store.mkdir()
        shutil.copyfile(aot.entry_path(lab.root / "renamed", key, src), aot.entry_path(store, key, dst))
        facts, stderr, _ = lab.run(store, case)
        assert facts[case.name]["load"] == "2" and "was not written by cvm-aot" in stderr
