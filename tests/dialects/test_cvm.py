"""The cvm dialect: its properties mirror cvm_rules.OP_ATTRS, its verifier is cvm_rules.infer, its docs parse."""

import re

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, FunctionType, StringAttr
from xdsl.dialects.func import Func, FuncOp
from xdsl.irdl import OptPropertyDef, VerificationContext
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.cvm import (
    CVM_OPERATORS,
    OPERATOR_CLASSES,
    Cvm,
    ParamOp,
    PrecisionAttr,
    create_operator,
    cvm_attrs,
    cvm_properties,
    tensor_precision,
    tensor_shape,
    tensor_type,
)
from cvmc.errors import CVMError

SAMPLE = {"int": 3, "opt_int": 3, "bool": None, "ints": (1, 2), "str": "x"}


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Func, Cvm):
        ctx.load_dialect(d)
    return ctx


def _parse(text: str):
    return Parser(_ctx(), text).parse_module()


def test_one_op_per_operator():
    assert len(CVM_OPERATORS) == 37
    assert set(OPERATOR_CLASSES) == set(rules.OPS)
    assert {op.name for op in Cvm.operations} == {f"cvm.{n}" for n in rules.OPS} | {"cvm.param"}


@pytest.mark.parametrize("op", rules.OPS)
def test_properties_mirror_op_attrs(op):
    """Same names, the typed attribute of each kind, required exactly when OP_ATTRS has no default."""
    props = OPERATOR_CLASSES[op].get_irdl_definition().properties
    specs = rules.OP_ATTRS[op]
    assert set(props) == {s.name for s in specs} | {"name"}
    for s in specs:
        assert isinstance(props[s.name], OptPropertyDef) == (s.default is not rules.REQUIRED), s.name
        value = (not s.default) if s.kind == "bool" else SAMPLE[s.kind]
        attr = cvm_properties(op, {s.name: value})[s.name]
        props[s.name].constr.verify(attr, VerificationContext())
        for other in ("str", "ints"):  # the attribute of another kind is rejected
            if other != s.kind:
                with pytest.raises(VerifyException):
                    props[s.name].constr.verify(cvm_properties("tile", {"reps": (1,)})["reps"] if other == "ints"
                                                else StringAttr("x"), VerificationContext())
        if s.kind in ("ints", "str"):
            with pytest.raises(VerifyException):
                props[s.name].constr.verify(cvm_properties("repeat", {"repeats": 2})["repeats"], VerificationContext())


@pytest.mark.parametrize("op", rules.OPS)
def test_operands_match_arity(op):
    """Each op's operand definitions admit exactly the input counts cvm_rules allows."""
    operands = OPERATOR_CLASSES[op].get_irdl_definition().operands
    if op == "concatenate":
        assert len(operands) == 1  # variadic
    elif op in ("conv2d", "dense"):
        assert len(operands) == 3  # data, weight, optional bias
    else:
        assert len(operands) == rules.num_inputs(op, rules.default_attrs(op, **_required(op)))


def _required(op):
    return {s.name: SAMPLE[s.kind] for s in rules.OP_ATTRS[op] if s.default is rules.REQUIRED}


def test_properties_to_attrs_and_back():
    attrs = rules.default_attrs("conv2d", channels=4, kernel_size=(3, 3), strides=(2, 2), use_bias=False)
    props = cvm_properties("conv2d", attrs)
    assert set(props) == {"channels", "kernel_size", "strides", "use_bias"}  # defaults are left out
    f = _parse("func.func @f(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>, %w: tensor<4x3x3x3xi32, #cvm.prec<8>>) {\n"
               "  func.return\n}").body.block.first_op
    assert isinstance(f, FuncOp)
    args = list(f.body.block.args)
    op = create_operator("conv2d", args, attrs, [tensor_type((1, 4, 3, 3), 21)], "c")
    assert cvm_attrs(op) == attrs
    op.verify()
    take = create_operator("take", args, rules.default_attrs("take"), [tensor_type((1,), 8)])
    assert "axis" not in take.properties and cvm_attrs(take)["axis"] is None


def test_verifier_reports_the_rule_message():
    """Whatever cvm_rules.infer raises is the verifier's message, word for word."""
    m = _parse("""func.func @f(%x: tensor<2x16xi32, #cvm.prec<8>>, %w: tensor<10x16xi32, #cvm.prec<8>>) {
      %0 = cvm.dense %x, %w {units = 8 : i64, use_bias = false}
           : (tensor<2x16xi32, #cvm.prec<8>>, tensor<10x16xi32, #cvm.prec<8>>) -> tensor<2x8xi32>
      func.return
    }""")
    with pytest.raises(CVMError) as rule:
        rules.infer("dense", rules.default_attrs("dense", units=8, use_bias=False), [(2, 16), (10, 16)], [8, 8])
    with pytest.raises(VerifyException, match=re.escape(str(rule.value))):
        m.verify()


def test_result_types_are_inference():
    base = """func.func @f(%x: tensor<2x3xi32, #cvm.prec<8>>) {{
      %0 = cvm.sum %x {{axis = array<i64: 1>}} : (tensor<2x3xi32, #cvm.prec<8>>) -> {}
      func.return
    }}"""
    for ok in ("tensor<2xi32, #cvm.prec<10>>", "tensor<2xi32>", "tensor<?xi32, #cvm.prec<10>>"):
        _parse(base.format(ok)).verify()
    for bad, msg in (("tensor<3xi32>", "expected result 0 of shape [2], got [3]"),
                     ("tensor<?x1xi32>", "expected result 0 of shape [2], got [?, 1]"),
                     ("tensor<2xi32, #cvm.prec<9>>", "expected result 0 of precision 10, got 9")):
        with pytest.raises(VerifyException, match=re.escape(msg)):
            _parse(base.format(bad)).verify()
    with pytest.raises(VerifyException, match="i64"):  # storage is int32
        _parse(base.format("tensor<2xi64>")).verify()


def test_unknown_operand_types_defer_checks():
    """An operand not yet inferred (no precision) leaves the op unchecked until the passes run."""
    _parse("""func.func @f(%x: tensor<2x3xi32>) {
      %0 = cvm.relu %x : (tensor<2x3xi32>) -> tensor<7xi32, #cvm.prec<3>>
      func.return
    }""").verify()


def test_precision_attr():
    t = tensor_type((1, 4), 8)
    assert str(t) == "tensor<1x4xi32, #cvm.prec<8>>"
    assert tensor_shape(t) == (1, 4) and tensor_precision(t) == 8
    assert tensor_precision(tensor_type((1, 4), None)) is None
    for p in (0, 33):
        with pytest.raises(VerifyException, match=re.escape(f"expected 'precision' in [1, 32], got {p}")):
            PrecisionAttr(p)


def test_param_op():
    values = np.array([[1, -127], [0, 127]])
    op = ParamOp("w", values, 8)
    op.verify()
    assert op.param_name.data == "w" and op.result.type == tensor_type((2, 2), 8)
    np.testing.assert_array_equal(op.array(), values)
    assert str(op) == '%0 = cvm.param "w" dense<[[1, -127], [0, 127]]> : tensor<2x2xi32, #cvm.prec<8>>'
    with pytest.raises(VerifyException, match=re.escape("expected values of precision 7 (|x| <= 63), got -127 at "
                                                        "index 1")):
        ParamOp("w", values, 7).verify()


def test_unknown_attribute():
    """A misspelt attribute would silently take its default: it is an error, as is any undeclared one."""
    op = """func.func @f(%x: tensor<3xi32, #cvm.prec<8>>) {{
      %0 = cvm.repeat %x {{repeats = 2 : i64, {} = 0 : i64}}
           : (tensor<3xi32, #cvm.prec<8>>) -> tensor<6xi32, #cvm.prec<8>>
      func.return
    }}"""
    known = "['repeats', 'axis', 'cvm.gas']"
    for key in ("axes", "cvm.note"):  # a dotted name is no escape: only the declared pass attributes
        with pytest.raises(VerifyException, match=re.escape(f"unknown attribute '{key}', expected one of {known}")):
            _parse(op.format(key)).verify()


_EXAMPLE = re.compile(r"^        (%.*(?:\n             .*)*)", re.M)


@pytest.mark.parametrize("cls", [*CVM_OPERATORS, ParamOp], ids=lambda c: c.name)
def test_docstring(cls):
    """Every op has a docstring: a line of meaning, the math, and an IR example that parses and verifies."""
    doc = cls.__doc__ or ""
    paragraphs = doc.strip().split("\n\n")
    assert len(paragraphs) >= 3, "meaning, math, example"
    (example,) = _EXAMPLE.findall(doc)
    example = " ".join(line.strip() for line in example.splitlines())
    assert f"= {cls.name} " in example
    head, _, types = example.rpartition(" : ")
    operands = re.findall(r"%\w+", head.split("=", 1)[1].split("{")[0])
    args = ""
    if operands:
        ftype = Parser(_ctx(), types).parse_type()
        assert isinstance(ftype, FunctionType)
        args = ", ".join(f"{o}: {t}" for o, t in zip(operands, ftype.inputs.data, strict=True))
    _parse(f"func.func @f({args}) {{\n  {example}\n  func.return\n}}").verify()
