"""The target the loop level is built for (`loops.target.Target`): printed and parsed back, refused with a
message naming what is wrong, recorded on the module by the passes (their option, else the module's, else the
machine-independent DEFAULT), and chosen from the host and the documented overrides in one place
(`runtime.target.detect_target`)."""

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import StringAttr
from xdsl.utils.exceptions import PassFailedException

from cvmc import CvmBuilder
from cvmc.passes.loops.target import DEFAULT, GPU, ISAS, Target, module_target
from cvmc.passes.pipelines import CvmToLoopsPass
from cvmc.runtime import target as host
from cvmc.runtime.cvm_ir import graph_to_module


@pytest.mark.parametrize("text", ["x86:generic", "x86:avx2", "x86:avx512-vnni", "x86:amx", "x86:avx2,no-mmk",
                                  "x86:avx512-vnni,emulated", "x86:amx,no-mmk,emulated", "cuda:sm_90", "cuda:any"])
def test_a_target_prints_as_it_parses(text):
    assert str(Target.parse(text)) == text


@pytest.mark.parametrize(("text", "message"), [
    ("x86:avx512", "expected a target x86:<generic|avx2|avx512-vnni|amx>"), ("arm:neon", "got 'arm:neon'"),
    ("x86:avx2,fast", "expected a target flag in no-mmk, emulated, got 'fast'"), ("cuda:", "got 'cuda:'"),
    ("cuda:sm_90,emulated", "got 'cuda:sm_90,emulated'")])
def test_a_bad_target_is_refused_with_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        Target.parse(text)


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


def test_the_pipeline_records_its_target_on_the_module_and_defaults_to_no_machine(monkeypatch):
    for env in ({}, {"CVMC_ISA": "generic", "CVMC_VNNI": "1", "CVMC_MMK": "0"}):  # the environment changes nothing
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        m = _module()
        CvmToLoopsPass().apply(Context(), m)
        assert m.attributes["cvmc.target"] == StringAttr(str(DEFAULT)) == StringAttr("x86:avx2")
        assert "cvmc.mmk_u8s8" in str(m)  # DEFAULT: AVX2's micro-kernel, whatever the host
    m = _module()
    CvmToLoopsPass(target="x86:avx512-vnni").apply(Context(), m)
    assert m.attributes["cvmc.target"] == StringAttr("x86:avx512-vnni")
    m = _module()
    m.attributes["cvmc.target"] = StringAttr("x86:generic,no-mmk")  # the module's own, when no option
    assert module_target(m) == Target("generic", mmk=False)
    with pytest.raises(PassFailedException, match="got 'x86:sse'"):
        CvmToLoopsPass(target="x86:sse").apply(Context(), _module())


@pytest.mark.parametrize(("features", "isa"), [(set(), "generic"), ({"avx2"}, "avx2"),
                                               ({"avx2", "avx512vnni"}, "avx2"),  # no AVX512-BW: no 512-bit bytes
                                               ({"avx2", "avx512vnni", "avx512bw"}, "avx512-vnni")])
def test_the_host_tier_from_its_features(monkeypatch, features, isa):
    monkeypatch.setattr(host, "host_features", lambda: frozenset(features))
    for k in ("CVMC_ISA", "CVMC_VNNI", "CVMC_AVX2", "CVMC_MMK"):
        monkeypatch.delenv(k, raising=False)
    assert host.detect_target() == Target(isa)
    assert host.detect_target("cuda") == GPU


@pytest.mark.parametrize(("env", "want"), [
    ({"CVMC_ISA": "avx2"}, "x86:avx2"), ({"CVMC_ISA": "amx-emulated"}, "x86:amx,emulated"),
    ({"CVMC_VNNI": "0"}, "x86:avx2"), ({"CVMC_AVX2": "0"}, "x86:generic"),
    ({"CVMC_MMK": "0"}, "x86:avx512-vnni,no-mmk"), ({"CVMC_ISA": "generic", "CVMC_VNNI": "1"}, "x86:avx512-vnni"),
    ({"CVMC_ISA": "generic", "CVMC_AVX2": "1"}, "x86:avx2"),
    ({"CVMC_VNNI": "2"}, "x86:avx512-vnni")])  # other values: no override
def test_the_overrides(monkeypatch, env, want):
    monkeypatch.setattr(host, "host_features", lambda: frozenset({"avx2", "avx512vnni", "avx512bw"}))
    for k in ("CVMC_ISA", "CVMC_VNNI", "CVMC_AVX2", "CVMC_MMK"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert str(host.detect_target()) == want


def test_a_bad_isa_override_and_a_tier_the_host_lacks_are_refused(monkeypatch):
    from cvmc.errors import CVMLogicError

    monkeypatch.setattr(host, "host_features", lambda: frozenset({"avx2"}))
    monkeypatch.setenv("CVMC_ISA", "avx512")
    with pytest.raises(CVMLogicError, match=r"expected \$CVMC_ISA in generic, avx2, avx512-vnni, amx .*'avx512'"):
        host.jit_target()
    monkeypatch.setenv("CVMC_ISA", "avx512-vnni")
    with pytest.raises(CVMLogicError, match="this CPU has no avx512-vnni"):
        host.jit_target()
    monkeypatch.setenv("CVMC_ISA", "avx512-vnni-emulated")  # portable IR: runs anywhere
    assert host.jit_target() == Target("avx512-vnni", emulated=True)


def test_the_same_pipeline_gives_the_same_ir_on_every_host(monkeypatch):
    """No pass looks at the machine: the IR of `cvm-to-loops` without a target is the same whatever the host's
    features and the environment's overrides."""
    texts = set()
    for features, env in ((frozenset(), {}), (frozenset({"avx2", "avx512vnni", "avx512bw"}), {"CVMC_VNNI": "0"}),
                          (frozenset({"avx2", "amx-int8", "amx-tile"}), {"CVMC_ISA": "amx", "CVMC_MMK": "0"})):
        monkeypatch.setattr(host, "host_features", lambda features=features: features)
        for k in ("CVMC_ISA", "CVMC_VNNI", "CVMC_AVX2", "CVMC_MMK"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        m = _module()
        CvmToLoopsPass().apply(Context(), m)
        texts.add(str(m))
    assert len(texts) == 1
