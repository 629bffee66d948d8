"""cvm-opt as users of xdsl-opt and mlir-opt expect it: located diagnostics, a pass list, a hint for targets
that need lowered IR, elided constants, a Graphviz view of a model."""

import re

import pytest

import cvmc.examples
from cvmc.passes import get_all_passes
from cvmc.tools import cvm_opt, cvm_translate


@pytest.fixture(scope="module")
def digits_mlir(tmp_path_factory):
    d = cvmc.examples.digits()
    out = tmp_path_factory.mktemp("opt") / "digits.mlir"
    assert cvm_translate.main(["--import-cvm", str(d.graph), str(d.params), "-o", str(out)]) == 0
    return out


def test_list_passes_has_every_cvmc_pass_with_its_line(capsys):
    assert cvm_opt.main(["--list-passes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == sorted(get_all_passes())
    assert all(len(ln.split(maxsplit=1)) == 2 for ln in lines)  # a description on every line
    assert any(ln.startswith("cvm-infer-shapes") and "shape" in ln for ln in lines)


def test_a_verify_error_shows_the_op_and_a_caret(digits_mlir, tmp_path, capsys):
    text = digits_mlir.read_text()
    bad = re.sub(r"(%rq2 = .*-> )tensor<1x10xi32", r"\1tensor<1x11xi32", text)
    bad = bad.replace("func.return %rq2 : tensor<1x10xi32", "func.return %rq2 : tensor<1x11xi32")
    head = ") -> tensor<1x{}xi32, #cvm.prec<8>> attributes"
    bad = bad.replace(head.format(10), head.format(11))
    assert bad != text
    path = tmp_path / "bad.mlir"
    path.write_text(bad)
    assert cvm_opt.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "cvm.cvm_right_shift" in err and "^^^^" in err
    assert "Operation does not verify: expected result 0 of shape [1, 10], got [1, 11]" in err
    assert err.rstrip().endswith("cvm-opt: CVMLogicError: expected result 0 of shape [1, 10], got [1, 11]")
    assert "dense_resource<__elided__>" in err  # the weights' hex is not printed in a diagnostic
    assert cvm_opt.main([str(path), "--verify-diagnostics"]) == 0
    assert "expected result 0 of shape [1, 10], got [1, 11]" in capsys.readouterr().out


@pytest.mark.parametrize("target", ["llvm-ir", "cuda"])
def test_a_target_on_ir_that_is_not_lowered_hints_the_pass(digits_mlir, target, capsys):
    assert cvm_opt.main([str(digits_mlir), "-t", target]) == 1
    err = capsys.readouterr().err
    lower = "cvm-to-gpu-loops" if target == "cuda" else "cvm-to-loops"
    assert "holds 'cvm.param'" in err and f"-p {lower} -t {target}" in err


@pytest.mark.parametrize(("limit", "elided"), [(64, ["fc1_w", "fc2_w"]), (63, ["fc1_w", "fc1_b", "fc2_w"]),
                                               (4096, []), (4095, ["fc1_w"])])
def test_elide_constants_larger_than_the_limit(digits_mlir, limit, elided, capsys):
    assert cvm_opt.main([str(digits_mlir), "--elide-elementsattrs-if-larger", str(limit)]) == 0
    out = capsys.readouterr().out
    found = re.findall(r'cvm.param "(\w+)" dense_resource<__elided__>', out)
    assert found == elided


def test_dot_has_shapes_and_precisions_on_the_edges(digits_mlir, capsys):
    assert cvm_opt.main([str(digits_mlir), "-t", "dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph cvm {") and out.rstrip().endswith("}")
    assert re.search(r'n\d+ -> n\d+ \[label="1x64 p8"\]', out)  # the input into fc1
    assert '[label="64x64 p8"]' in out and '[label="1x10 p24"]' in out
    assert out.count(" -> ") == 10  # fc1 (3), relu, rq1, fc2 (3), rq2, return: one edge per use


# issue 39: the README's own pipeline, bad pipelines as one line, a "did you mean", a pass that does nothing


@pytest.mark.parametrize("spec", ["cvm-to-loops{target=x86:avx512-vnni}", 'cvm-to-loops{target="x86:avx512-vnni"}'])
def test_an_unquoted_option_value_parses_as_the_quoted_one(digits_mlir, spec, capsys):
    assert cvm_opt.main([str(digits_mlir), "-p", 'cvm-to-loops{target="x86:avx512-vnni"}']) == 0
    want = capsys.readouterr().out
    assert cvm_opt.main([str(digits_mlir), "-p", spec]) == 0
    assert capsys.readouterr().out == want and 'tier = "avx512-vnni"' in want


@pytest.mark.parametrize(("spec", "column", "reason"), [
    ("cvm-to-loops{", 14, "Expected argument name here"),
    (",", 1, "Expected pass name here"),
    ("a b", 2, "Expected a comma or pass arguments here"),
    ("cvm-to-loops{target=}", 21, "Unknown argument value"),
])  # fmt: skip
def test_a_pipeline_that_does_not_parse_is_one_usage_line(digits_mlir, spec, column, reason, capsys):
    assert cvm_opt.main([str(digits_mlir), "-p", spec]) == 64
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (f"cvm-opt: error: cannot parse the pass pipeline {spec!r} at column "
                                            f"{column}: {reason}" + (", wrap argument in quotes to pass arbitrary "
                                                                     "string values" if "Unknown" in reason else ""))
    assert "Traceback" not in err


@pytest.mark.parametrize("value", ["[8,32,256]", "[8, 32, 256]", "8,32,256"])
def test_a_bracketed_list_is_the_comma_list(digits_mlir, value, capsys):
    assert cvm_opt.main([str(digits_mlir), "-p", f"convert-cinn-to-loops{{dot_block={value}}}"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("cvm-opt: CVMLogicError: expected the option dot_block as "
                                                   "MR,NR,KC")
    assert "got 8,32,256" in err and "Traceback" not in err


def test_normalize_pipeline_leaves_what_xdsl_parses():
    for spec in ["cvm-infer-shapes,cvm-gas", 'cvm-to-loops{target="x86:amx"}',
                 "convert-cinn-to-loops{dot_block=8,2,256}", "x{a=1 b=true c=-2.5}"]:
        assert cvm_opt.normalize_pipeline(spec) == spec
    assert cvm_opt.normalize_pipeline("p{target=x86:avx2 n=3}") == 'p{target="x86:avx2" n=3}'


@pytest.mark.parametrize(("name", "hint"), [("cvm-fus", "did you mean 'cvm-fuse'?"),
                                            ("cvm-to-loop", "did you mean 'cvm-to-loops'?"),
                                            ("zzzz", "cvm-opt --list-passes lists cvmc's")])
def test_an_unknown_pass_gets_a_did_you_mean(digits_mlir, name, hint, capsys):
    assert cvm_opt.main([str(digits_mlir), "-p", f"cvm-infer-shapes,{name}"]) == 64
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"cvm-opt: error: unknown pass {name!r} in -p " \
                                                               f"'cvm-infer-shapes,{name}' ({hint})"


def test_a_pass_for_another_dialect_says_it_does_nothing(digits_mlir, tmp_path, capsys):
    assert cvm_opt.main([str(digits_mlir), "-p", "convert-cinn-to-loops"]) == 0
    assert ("cvm-opt: warning: pass 'convert-cinn-to-loops' works on cinn ops, and the module holds none when it "
            "runs: it does nothing") in capsys.readouterr().err
    assert cvm_opt.main([str(digits_mlir), "-p", "cvm-infer-shapes,cvm-gas"]) == 0
    assert "warning" not in capsys.readouterr().err
    out = str(tmp_path / "g.mlir")
    assert cvm_opt.main([str(digits_mlir), "-p", "convert-cvm-to-taskgraph,taskgraph-stats", "-o", out]) == 0
    assert "warning" not in capsys.readouterr().err  # the first pass makes what the second reads


def test_list_passes_gives_whole_sentences(capsys):
    assert cvm_opt.main(["--list-passes"]) == 0
    for line in capsys.readouterr().out.splitlines():
        assert line.rstrip().endswith((".", ")")), line
    assert cvm_opt.first_sentence("Do a thing (see `x.y`. here)\n  over two lines. More.\n\nArgs") == \
        "Do a thing (see `x.y`. here) over two lines."


def test_reading_elided_constants_says_why(digits_mlir, tmp_path, capsys):
    out = str(tmp_path / "e.mlir")
    assert cvm_opt.main([str(digits_mlir), "--elide-elementsattrs-if-larger", "16", "-o", out]) == 0
    assert cvm_opt.main([str(tmp_path / "e.mlir")]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "cvm-opt: CVMLogicError: the input holds constants elided by --elide-elementsattrs-if-larger "
        "(dense_resource<__elided__>): such a print is for reading and cannot be read back; print the module "
        "without the option")
