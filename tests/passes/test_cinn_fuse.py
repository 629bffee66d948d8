"""convert-cinn-to-loops follows the recorded `cinn.group` / `cinn.view` decisions and refuses broken ones."""

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects import cinn
from cvmc.passes.cinn_fuse import CinnFusePass
from cvmc.passes.cinn_mark_views import CinnMarkViewsPass
from cvmc.passes.convert_cinn_to_loops import ConvertCinnToLoopsPass, plan_kernels

PROGRAM = """
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {{
  %a = cinn.exp %x {a} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = cinn.negative %a {b} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = cinn.add %b, %b {c} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = cinn.transpose %c {t} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %c, %t : tensor<4x8xf32>, tensor<8x4xf32>
}}
"""


def _module(**attrs: str) -> builtin.ModuleOp:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, cinn.Cinn):
        ctx.load_dialect(d)
    fields = {k: attrs.get(k, "") for k in "abc"}
    fields["t"] = attrs.get("t", "{axis = array<i64: 1, 0>}")
    m = Parser(ctx, PROGRAM.format(**fields)).parse_module()
    m.verify()
    return m


def _function(m: builtin.ModuleOp) -> func.FuncOp:
    f = m.body.block.first_op
    assert isinstance(f, func.FuncOp)
    return f


def test_the_passes_group_a_chain_and_keep_returned_values():
    m = _module()
    CinnMarkViewsPass().apply(Context(), m)
    CinnFusePass().apply(Context(), m)
    plans = plan_kernels(_function(m))
    # exp -> negative is a chain; negative has two uses (add reads it twice), so it is stored; the returned
    # transpose is no view
    assert [(p.root.name, [o.name for o in p.inlined]) for p in plans] == [
        ("cinn.negative", ["cinn.exp"]), ("cinn.add", []), ("cinn.transpose", [])
    ]


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"b": "{cinn.group = 0 : i64}", "c": "{cinn.group = 0 : i64}"}, "one result read by one op"),
        ({"a": "{cinn.group = 0 : i64}", "b": "{cinn.group = 0 : i64}", "c": "{cinn.group = 1 : i64}"}, None),
        ({"a": "{cinn.group = 0 : i64}", "c": "{cinn.group = 0 : i64}"}, "expected its reader to be in its group 0"),
        ({"a": "{cinn.view}"}, "expected 'cinn.view' only on"),
        ({"t": "{axis = array<i64: 1, 0>, cinn.view}"}, "expected no 'cinn.view' on a returned value"),
        ({"t": "{axis = array<i64: 1, 0>, cinn.recompute}"}, "expected 'cinn.recompute' only on element-wise ops"),
        ({"c": "{cinn.recompute}"}, "expected no 'cinn.recompute' on a returned value"),
    ],
)
def test_the_lowering_checks_recorded_decisions(attrs, message):
    m = _module(**attrs)
    if message is None:  # a valid choice is followed
        ConvertCinnToLoopsPass().apply(Context(), m)
        names = [f.sym_name.data for f in m.ops if isinstance(f, func.FuncOp)]
        assert names == ["f_1_negative", "f_2_add", "f_3_transpose"]
        return
    with pytest.raises(PassFailedException, match=message):
        ConvertCinnToLoopsPass().apply(Context(), m)


LAYER_NORM = """
func.func @ln(%x: tensor<4x8xf32>, %m: tensor<4x1xf32>, %r: tensor<4x1xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %c = cinn.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %q = cinn.mul %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = cinn.reduce sum %q {dim = array<i64: 1>, keep_dim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %y = cinn.mul %c, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = cinn.exp %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = cinn.add %e, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z, %v : tensor<4x8xf32>, tensor<4x1xf32>
}
"""


def test_a_cheap_op_of_several_readers_is_recomputed_in_each():
    """x - mean (operands an argument and a smaller tensor, read by two muls) is computed again in both kernels;
    exp (read twice, by one add) stays stored; the values are the bits of one kernel per primitive."""
    ctx = Context()
    for d in (builtin.Builtin, func.Func, cinn.Cinn):
        ctx.load_dialect(d)
    m = Parser(ctx, LAYER_NORM).parse_module()
    CinnMarkViewsPass().apply(Context(), m)
    CinnFusePass().apply(Context(), m)
    marked = [o.name for o in _function(m).body.ops if "cinn.recompute" in o.attributes]
    assert marked == ["cinn.sub"]
    plans = plan_kernels(_function(m))
    assert [(p.root.name, [o.name for o in p.inlined]) for p in plans] == [
        ("cinn.reduce", ["cinn.mul", "cinn.sub"]), ("cinn.exp", ["cinn.mul", "cinn.sub"]), ("cinn.add", [])
    ]

    pytest.importorskip("cvmc.runtime.jit", reason="the LLVM JIT is not available")
    import numpy as np

    from cvmc import CinnBuilder

    rng = np.random.default_rng(5)
    x, mean, r = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (4, 1), (4, 1)))
    b = CinnBuilder("ln")
    u, mv, rv = (b.create_input("float32", a.shape, n) for a, n in ((x, "x"), (mean, "m"), (r, "r")))
    c = b.sub(u, mv)
    outs = [b.reduce(b.mul(c, c), "sum", [1], True), b.mul(c, rv)]
    fused, unfused = (b.compile(outs, device="cpu", fuse=f)(x=x, m=mean, r=r) for f in (True, False))
    for a, e in zip(fused, unfused, strict=True):
        np.testing.assert_array_equal(a, e)
