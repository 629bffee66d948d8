"""The target the loop level is built for (`loops.target.Target`): printed and parsed back, refused with a
message naming what is wrong, recorded on the module by the passes (their option, else the module's, else the
machine-independent DEFAULT), and chosen from the host and the documented overrides in one place
(`runtime.driver.target.detect_target`)."""

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import StringAttr
from xdsl.utils.exceptions import PassFailedException

from cvmc import CvmBuilder
from cvmc.dialects.cvmc import TargetAttr
from cvmc.passes.loops.target import DEFAULT, GPU, ISAS, Target, module_target
from cvmc.passes.pipelines import CvmToLoopsPass
from cvmc.runtime.driver import target as runtime_target
from cvmc.runtime.frontend.cvm_ir import graph_to_module


@pytest.mark.parametrize("text", ["x86:generic", "x86:avx2", "x86:avx512-vnni", "x86:amx", "x86:avx2,no-mmk",
                                  "x86:avx512-vnni,emulated", "x86:amx,no-mmk,emulated", "cuda:sm_90", "cuda:any",
                                  "x86:avx2,vector_bytes=16", "x86:avx2,vector_bytes=64", "x86:generic,cpu=x86-64",
                                  "x86:avx2,no-mmk,vector_bytes=64,cpu=znver4,features=+avx2,-avx512f,+amx-int8",
                                  "x86:avx2,features=+sse4.1", "cuda:sm_61", "cuda:sm_999"])
def test_a_target_prints_as_it_parses_and_as_an_attribute(text):
    t = Target.parse(text)
    assert str(t) == text
    assert Target.of_attr(t.attr()) == t  # the module attribute holds every field


def test_the_fields_code_generation_reads():
    t = Target.parse("x86:avx512-vnni,vector_bytes=64,cpu=x86-64-v4,features=+avx512f,-amx-int8")
    assert (t.isa, t.vector_bytes, t.cpu, t.features) == ("avx512-vnni", 64, "x86-64-v4", "+avx512f,-amx-int8")
    assert Target.parse("x86:avx2") == DEFAULT and (DEFAULT.cpu, DEFAULT.features, DEFAULT.vector_bytes) == ("", "", 32)


@pytest.mark.parametrize(("text", "message"), [
    ("x86:avx512", "expected a target x86:<generic|avx2|avx512-vnni|amx>"), ("arm:neon", "got 'arm:neon'"),
    ("x86:avx2,fast", "expected a target flag in no-mmk, emulated or vector_bytes=.*, got 'fast'"),
    ("cuda:", "got 'cuda:'"),
    ("cuda:sm_90,emulated", "got 'cuda:sm_90,emulated'"),
    ("x86:avx2,vector_bytes=8", "expected 'vector_bytes' in 16, 32, 64, got 8"),
    ("x86:avx2,vector_bytes=128", "expected 'vector_bytes' in 16, 32, 64, got 128"),
    ("x86:avx2,vector_bytes=x", "expected vector_bytes=<an integer>, got 'vector_bytes=x'"),
    ("x86:avx2,cpu=a,cpu=b", "expected each of vector_bytes, cpu, features once, got cpu twice"),
    ("x86:avx2,cpu=Zen", "expected 'cpu' an LLVM CPU name"), ("x86:avx2,cpu", "got 'cpu'"),
    ("x86:avx2,features=+avx2,fma", "got 'fma' in '[+]avx2,fma'"),
    ("x86:avx2,no-mmk=1", "got 'no-mmk=1'"),
    ("cuda:sm_60", "expected 'arch' any or sm_NN [(]NN >= 61"), ("cuda:sm_1000", "got 'sm_1000'")])
def test_a_bad_target_is_refused_with_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        Target.parse(text)


def test_a_gpu_target_has_no_cpu_field():
    Target(gpu="sm_90")
    for field in ({"mmk": False}, {"emulated": True}, {"cpu": "znver3"}, {"features": "+avx2"}, {"vector_bytes": 64},
                  {"isa": "generic"}):
        with pytest.raises(ValueError, match="expected no CPU field on a cuda target"):
            Target(gpu="sm_90", **field)


def test_each_tier_implies_the_ones_below_and_a_gpu_none():
    for i, isa in enumerate(ISAS):
        t = Target(isa)
        assert [t.has(other) for other in ISAS] == [j <= i for j in range(len(ISAS))]
    assert not any(GPU.has(isa) for isa in ISAS) and not GPU.blocked
    assert Target("amx").capped("avx2") == Target("avx2") and Target("generic").capped("avx2") == Target("generic")


def _module():
    b = CvmBuilder()
    x = b.create_input([1, 4, 6, 6], 8)
    w = b.create_param([[[[1] * 3] * 3] * 4] * 8, 8)
    return graph_to_module(b.graph([b.conv2d(b.relu(x), w, channels=8, kernel_size=(3, 3), use_bias=False)]))


@pytest.mark.hosts
def test_the_pipeline_records_its_target_on_the_module_and_defaults_to_no_machine(monkeypatch, host):
    for env in ({}, {"CVMC_ISA": "generic", "CVMC_VNNI": "1", "CVMC_MMK": "0"}):  # the environment changes nothing
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        m = _module()
        CvmToLoopsPass().apply(Context(), m)
        assert m.attributes["cvmc.target"] == DEFAULT.attr() == TargetAttr("avx2")
        assert "cvmc.mmk_u8s8" in str(m)  # DEFAULT: AVX2's micro-kernel, whatever the host
    m = _module()
    CvmToLoopsPass(target="x86:avx512-vnni").apply(Context(), m)
    assert m.attributes["cvmc.target"] == TargetAttr("avx512-vnni")
    m = _module()
    m.attributes["cvmc.target"] = TargetAttr("generic", mmk=False)  # the module's own, when no option
    assert module_target(m) == Target("generic", mmk=False)
    with pytest.raises(PassFailedException, match="got 'x86:sse'"):
        CvmToLoopsPass(target="x86:sse").apply(Context(), _module())
    m = _module()
    m.attributes["cvmc.target"] = StringAttr("x86:avx2")  # the string of before: refused, named
    with pytest.raises(PassFailedException, match=r'expected the module attribute cvmc.target a #cvmc.target<...>, '
                                                  r'got "x86:avx2"'):
        CvmToLoopsPass().apply(Context(), m)


VNNI_FEATURES = {"avx2", "avx512vnni", "avx512bw"}


@pytest.mark.parametrize(("features", "amx", "isa"), [
    (set(), False, "generic"), ({"avx2"}, False, "avx2"),
    ({"avx2", "avx512vnni"}, False, "avx2"),  # no AVX512-BW: no 512-bit bytes
    (VNNI_FEATURES, False, "avx512-vnni"), (VNNI_FEATURES, True, "avx512-vnni"),  # no AMX on the CPU: granted or not
    (VNNI_FEATURES | {"amx-int8", "amx-tile"}, False, "avx512-vnni"),  # AMX that Linux does not grant
    (VNNI_FEATURES | {"amx-int8", "amx-tile"}, True, "amx"), (VNNI_FEATURES | {"amx-tile"}, True, "avx512-vnni"),
    ({"avx2", "amx-int8", "amx-tile"}, True, "avx2")])  # AMX without AVX512-VNNI: not the amx tier
def test_the_host_tier_from_its_features(monkeypatch, host, features, amx, isa):
    host.set(features, amx=amx)
    for k in ("CVMC_ISA", "CVMC_VNNI", "CVMC_AVX2", "CVMC_MMK"):
        monkeypatch.delenv(k, raising=False)
    assert runtime_target.detect_target() == Target(isa)
    assert runtime_target.detect_target("cuda") == GPU


@pytest.mark.parametrize(("env", "want"), [
    ({"CVMC_ISA": "avx2"}, "x86:avx2"), ({"CVMC_ISA": "amx-emulated"}, "x86:amx,emulated"),
    ({"CVMC_VNNI": "0"}, "x86:avx2"), ({"CVMC_AVX2": "0"}, "x86:generic"),
    ({"CVMC_MMK": "0"}, "x86:avx512-vnni,no-mmk"), ({"CVMC_ISA": "generic", "CVMC_VNNI": "1"}, "x86:avx512-vnni"),
    ({"CVMC_ISA": "generic", "CVMC_AVX2": "1"}, "x86:avx2"),
    ({"CVMC_VNNI": "2"}, "x86:avx512-vnni")])  # other values: no override
def test_the_overrides(monkeypatch, host, env, want):
    host.set({"avx2", "avx512vnni", "avx512bw"})
    for k in ("CVMC_ISA", "CVMC_VNNI", "CVMC_AVX2", "CVMC_MMK"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert str(runtime_target.detect_target()) == want


def test_a_bad_isa_override_and_a_tier_the_host_lacks_are_refused(monkeypatch, host):
    from cvmc.errors import CVMLogicError

    host.set({"avx2"})
    monkeypatch.setenv("CVMC_ISA", "avx512")
    with pytest.raises(CVMLogicError, match=r"expected \$CVMC_ISA in generic, avx2, avx512-vnni, amx .*'avx512'"):
        runtime_target.jit_target()
    monkeypatch.setenv("CVMC_ISA", "avx512-vnni")
    with pytest.raises(CVMLogicError, match="this CPU has no avx512-vnni"):
        runtime_target.jit_target()
    monkeypatch.setenv("CVMC_ISA", "avx512-vnni-emulated")  # portable IR: runs anywhere
    assert runtime_target.jit_target() == Target("avx512-vnni", emulated=True)


def test_the_same_pipeline_gives_the_same_ir_on_every_host(monkeypatch, host):
    """No pass looks at the machine: the IR of `cvm-to-loops` without a target is the same whatever the host's
    features and the environment's overrides."""
    texts = set()
    for features, env in ((frozenset(), {}), (frozenset({"avx2", "avx512vnni", "avx512bw"}), {"CVMC_VNNI": "0"}),
                          (frozenset({"avx2", "amx-int8", "amx-tile"}), {"CVMC_ISA": "amx", "CVMC_MMK": "0"})):
        host.set(features)
        for k in ("CVMC_ISA", "CVMC_VNNI", "CVMC_AVX2", "CVMC_MMK"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        m = _module()
        CvmToLoopsPass().apply(Context(), m)
        texts.add(str(m))
    assert len(texts) == 1


@pytest.mark.parametrize("name", ["generic", "avx2", "avx512-vnni", "amx"])
def test_each_simulated_host_has_its_tier_and_vector_width(host, name):
    host.set(name)
    assert host.isa == runtime_target.host_isa() == name
    assert [runtime_target.host_has(isa) for isa in ISAS] == [ISAS.index(isa) <= ISAS.index(name) for isa in ISAS]
    assert runtime_target.host_vector_bytes() == (64 if name in ("avx512-vnni", "amx") else 32)
    assert runtime_target.amx_permitted() == (name == "amx")


@pytest.fixture
def amx_machine(monkeypatch):
    """The real CPU's answers as an AMX machine gives them, cached as the real ones are (issue 36: `make test` on
    a Xeon with AMX-INT8 failed 3 tests of this file, whose patched "no AMX" world still said AMX)."""
    import functools

    import hosts

    features = frozenset(hosts.HOSTS["amx"][0])
    monkeypatch.setattr(hosts, "_REAL_FEATURES", functools.cache(lambda: features))
    monkeypatch.setattr(hosts, "_REAL_GRANTED", functools.cache(lambda: True))
    monkeypatch.setattr(runtime_target, "host_features", hosts._REAL_FEATURES)
    monkeypatch.setattr(runtime_target, "amx_granted", hosts._REAL_GRANTED)
    assert runtime_target.host_isa() == "amx"


def test_a_simulated_host_hides_the_real_amx_machine(amx_machine):
    """On an AMX machine, a host simulated without AMX says no AMX everywhere (tier, overrides, `host_has`), and
    the machine's answers come back after it."""
    import hosts

    for sim in hosts.simulated("avx512-vnni"):
        assert runtime_target.detect_target() == Target("avx512-vnni", vector_bytes=64)  # AVX-512: zmm blocks
        assert not runtime_target.host_has("amx") and not runtime_target.amx_permitted()
        sim.set(VNNI_FEATURES)  # the features of test_the_overrides
        assert str(runtime_target.detect_target()) == "x86:avx512-vnni"
        sim.set({"avx2"}, amx=True)  # a grant is no tier without the features
        assert runtime_target.host_isa() == "avx2"
    assert runtime_target.host_isa() == "amx"


def test_the_amx_permission_follows_the_features_asked_now(monkeypatch):
    """`amx_permitted` asks the features anew: replacing `host_features` alone (as a caller of the module may)
    takes AMX away, whatever was granted and cached before."""
    monkeypatch.setattr(runtime_target, "amx_granted", lambda: True)
    monkeypatch.setattr(runtime_target, "host_features", lambda: frozenset(VNNI_FEATURES | {"amx-int8", "amx-tile"}))
    assert runtime_target.host_isa() == "amx"
    monkeypatch.setattr(runtime_target, "host_features", lambda: frozenset(VNNI_FEATURES))
    assert runtime_target.host_isa() == "avx512-vnni" and not runtime_target.amx_permitted()


@pytest.mark.hosts
def test_the_host_option_names_the_simulated_host(request, host):
    """`--host NAME` (`make test-hosts`): the `host` fixture is that host; `real` (the default): this CPU's own."""
    import hosts

    name = request.config.getoption("--host")
    assert host.name == name
    if name == "real":
        assert runtime_target.host_features() == hosts.real_features()
        assert all(runtime_target.host_has(isa) == hosts.real_has(isa) for isa in ISAS)
    else:
        assert runtime_target.host_isa() == name


def test_the_simulated_host_clears_the_real_answers_before_and_after():
    """Nothing cached about the real CPU leaks into a simulated host or out of it."""
    import hosts

    real = runtime_target.host_features
    real()
    assert real.cache_info().currsize == 1
    for sim in hosts.simulated("generic"):
        assert real.cache_info().currsize == 0 and runtime_target.amx_granted is not hosts._REAL_GRANTED
        assert runtime_target.host_features() == sim.features
        real()  # a test that asked the real CPU inside
    assert real.cache_info().currsize == 0 and hosts._REAL_GRANTED.cache_info().currsize == 0
    assert runtime_target.host_features is real and runtime_target.amx_granted is hosts._REAL_GRANTED
