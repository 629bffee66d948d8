"""convert-cinn-to-loops follows the recorded `cinn.group` / `cinn.view` decisions and refuses broken ones."""

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects import cinn
from cvmc.passes.cinn_fuse import CinnFusePass
from cvmc.passes.cinn_mark_views import CinnMarkViewsPass
from cvmc.passes.convert_cinn_to_loops import (
    CHAIN_ELEMENTS,
    CHAIN_OPS,
    CHAINS,
    LONG_CHAIN_OPS,
    LONG_CHAINS,
    ConvertCinnToLoopsPass,
    plan_kernels,
)

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
    # exp -> negative -> add is a chain (add reads negative twice: one group, computed once); the returned
    # transpose is no view
    assert [(p.root.name, [o.name for o in p.inlined]) for p in plans] == [
        ("cinn.add", ["cinn.negative", "cinn.exp"]), ("cinn.transpose", [])
    ]


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"c": "{cinn.group = 0 : i64}", "t": "{axis = array<i64: 1, 0>, cinn.group = 0 : i64}"},
         "to have one result, read and not returned"),
        ({"a": "{cinn.group = 0 : i64}", "b": "{cinn.group = 0 : i64}", "c": "{cinn.group = 1 : i64}"}, None),
        ({"a": "{cinn.group = 0 : i64}", "c": "{cinn.group = 0 : i64}"}, "all its readers to be in its group 0"),
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
    exp (read twice, by one add) joins the add's kernel; the values are the bits of one kernel per primitive."""
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
        ("cinn.reduce", ["cinn.mul", "cinn.sub"]), ("cinn.add", ["cinn.exp", "cinn.mul", "cinn.sub"])
    ]

    pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")
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


def _fused_plans(b, outs) -> tuple[builtin.ModuleOp, list]:
    m = b.build(outs)
    CinnMarkViewsPass().apply(Context(), m)
    CinnFusePass().apply(Context(), m)
    return m, plan_kernels(_function(m))


def _chain(b, x, length):
    """bench/cinn_programs.py's chain: y = max((y + a) * m - x, -((y + a) * m)), `length` ops; the product has
    two readers (sub and negative)."""
    y = x
    for i in range(length // 4):
        y = b.mul(b.add(y, b.const_scalar(0.5 + i, f"a{i}")), b.const_scalar(0.25, f"m{i}"))
        y = b.max(b.sub(y, x), b.negative(y))
    return y


def test_an_element_wise_chain_with_values_of_several_readers_is_one_vectorized_kernel():
    pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")
    import numpy as np

    from cvmc import CinnBuilder
    from cvmc.codegen.llvm import emit_llvm
    from cvmc.runtime.engine.jit import optimized_ir

    b = CinnBuilder("chain")
    x = b.create_input("float32", [1000], "x")
    y = _chain(b, x, 16)
    m, plans = _fused_plans(b, [y])
    work = [p for p in plans if p.root.name != "cinn.const_scalar"]
    assert [(p.root.name, len(p.inlined)) for p in work] == [("cinn.max", 19)]
    assert [v.name_hint for v in work[0].inputs if v.name_hint == "x"] == ["x"]  # x read once, by name
    ConvertCinnToLoopsPass().apply(Context(), m)
    kernel = next(f for f in m.ops if isinstance(f, func.FuncOp) and f.sym_name.data.endswith("_max"))
    # each op once in the loop body: 4 rounds of add, mul, sub, negative, max (mul read twice)
    assert sum(o.name in ("arith.mulf", "arith.addf") for o in kernel.walk()) == 8
    assert sum(o.name == "arith.select" for o in kernel.walk()) == 8  # a max: 2 compares, 2 selects
    assert "x float>" in optimized_ir(emit_llvm(m))  # the loop is vectorized

    data = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    fused, unfused = (b.compile([y], device="cpu", fuse=f)(x=data)[0] for f in (True, False))
    np.testing.assert_array_equal(fused, unfused)
    want = data
    for i in range(4):
        want = (want + np.float32(0.5 + i)) * np.float32(0.25)
        want = np.maximum(want - data, -want)
    np.testing.assert_array_equal(fused, want)


def test_a_diamond_chain_of_depth_30_is_one_kernel_of_linear_size():
    """y_{i+1} = (y_i * c) + (y_i - c): every y_i has two readers, so walking the operands as a tree would take
    2^30 steps; the plan and the kernel hold each op once."""
    pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")
    import numpy as np

    from cvmc import CinnBuilder

    depth = 30
    b = CinnBuilder("diamond")
    x = b.create_input("float32", [64], "x")
    c = b.const_scalar(0.5, "c")
    y = x
    for _ in range(depth):
        y = b.add(b.mul(y, c), b.sub(y, c))
    m, plans = _fused_plans(b, [y])
    assert [(p.root.name, len(p.inlined)) for p in plans] == [("cinn.const_scalar", 0), ("cinn.add", 3 * depth - 1)]
    ConvertCinnToLoopsPass().apply(Context(), m)
    kernel = next(f for f in m.ops if isinstance(f, func.FuncOp) and f.sym_name.data.endswith("_add"))
    assert sum(o.name in ("arith.mulf", "arith.addf", "arith.subf") for o in kernel.walk()) == 3 * depth
    assert len(list(kernel.walk())) <= 5 * depth + 10  # per level 3 ops and 2 loads of c (a tree: 2^30 ops)

    data = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    fused, unfused = (b.compile([y], device="cpu", fuse=f)(x=data)[0] for f in (True, False))
    np.testing.assert_array_equal(fused, unfused)
    want = data
    for _ in range(depth):
        want = want * np.float32(0.5) + (want - np.float32(0.5))
    np.testing.assert_array_equal(fused, want)


def test_a_value_read_by_a_reduce_and_an_element_wise_op_of_other_groups_stays_stored():
    """Softmax's exp feeds the sum (its own group) and the division: its readers are in two groups, so it is
    stored once and read by both."""
    from cvmc import CinnBuilder

    b = CinnBuilder("softmax")
    x = b.create_input("float32", [4, 8], "x")
    e = b.exp(b.sub(x, b.reduce(x, "max", [1], True)))
    _, plans = _fused_plans(b, [b.div(e, b.reduce(e, "sum", [1], True))])
    assert [p.root.name for p in plans] == ["cinn.reduce", "cinn.exp", "cinn.reduce", "cinn.div"]


@pytest.mark.parametrize(("size", "ops", "chains"), [
    (CHAIN_ELEMENTS, CHAIN_OPS, CHAINS),  # at both bounds: CHAINS elements an iteration
    (CHAIN_ELEMENTS - CHAINS, CHAIN_OPS, 1),  # one element under CHAIN_ELEMENTS' bound (by a multiple of CHAINS)
    (CHAIN_ELEMENTS, CHAIN_OPS - 1, 1),  # one op under CHAIN_OPS
    (CHAIN_ELEMENTS, LONG_CHAIN_OPS, LONG_CHAINS),  # at LONG_CHAIN_OPS' bound
    (CHAIN_ELEMENTS, LONG_CHAIN_OPS - 1, CHAINS),  # one op under it
])
def test_a_long_element_wise_kernel_runs_independent_chains(size, ops, chains):
    pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")
    import numpy as np

    from cvmc import CinnBuilder

    b = CinnBuilder("chains")
    x = b.create_input("float32", [size], "x")
    y = x
    for _ in range(ops):  # a dependency chain of `ops` adds per element
        y = b.add(y, x)
    m, plans = _fused_plans(b, [y])
    assert len(plans) == 1 and len(plans[0].inlined) + 1 == ops
    ConvertCinnToLoopsPass().apply(Context(), m)
    kernel = list(m.ops)[-1]
    assert isinstance(kernel, func.FuncOp)
    assert sum(o.name == "arith.addf" for o in kernel.walk()) == ops * chains
    data = np.random.default_rng(6).standard_normal(size).astype(np.float32)
    fused, unfused = (b.compile([y], device="cpu", fuse=f)(x=data)[0] for f in (True, False))
    np.testing.assert_array_equal(fused, unfused)
