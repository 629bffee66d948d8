"""`make mutate`: cosmic-ray over the rule and fast-path modules, against the tests that cover them (issue 16).

    .venv/bin/python tests/mutation/run.py [--module NAME ...] [--workers 2] [--keep DIR]

For each module of `MODULES` it makes a cosmic-ray session (`cosmic-ray init`), keeps the mutants of the chosen
operators (`OPERATORS`) inside the chosen functions (the rest are marked skipped), splits them over `--workers`
copies of the tree and runs `cosmic-ray exec` in each at once, then reports per module the mutants, the killed,
the survivors and the score (killed / (killed + survived); a mutant that breaks the import or times out counts
as killed, cosmic-ray's "incompetent" is left out). A survivor must be listed in `tests/mutation/equivalent.md`
with the reason it is equivalent; the exit status is 1 when one is not.

Each worker copy is the tree's tracked and unignored files, the committed `cvmc/<layer>` links among them
(relative: to the copy's own `dialects/`, `passes/`, ... folders): `python -m pytest` run in the copy imports the
mutated files there (the editable install's finder comes after the working directory on sys.path), so the checkout
itself is never mutated. Each test run gets a fresh JIT cache (compiled programs are cached by graph, not by
compiler) and writes no bytecode. `--module` runs some modules; `--keep DIR` keeps the copies and sessions, and
`--retry DIR` runs again, against the tree's current tests, only the mutants that survived in the sessions kept
there (the score after new tests, without running the killed ones again).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT = Path(__file__).with_name("equivalent.md")

# The mutation operators run: boundary shifts of comparisons, negations, number +-1, a few arithmetic swaps,
# and/or, True/False, loops that never run, removed decorators (cosmic-ray's `core/` names).
OPERATORS = re.compile(
    r"core/(NumberReplacer|AddNot|ReplaceAndWithOr|ReplaceOrWithAnd|ReplaceTrueWithFalse|ReplaceFalseWithTrue"
    r"|ZeroIterationForLoop|RemoveDecorator|ReplaceContinueWithBreak|ReplaceBreakWithContinue"
    r"|ReplaceComparisonOperator_(Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Eq_NotEq|NotEq_Eq)"
    r"|ReplaceBinaryOperator_(Add_Sub|Sub_Add|Mul_Add|FloorDiv_Mul|Mod_FloorDiv|LShift_RShift|RShift_LShift"
    r"|BitAnd_BitOr|BitOr_BitAnd)"
    r"|ReplaceUnaryOperator_(USub_UAdd|Delete_Not|Delete_USub))$"
)

PYTEST = ["-x", "-q", "-p", "no:cacheprovider"]


@dataclass(frozen=True)
class Module:
    name: str
    path: str
    tests: tuple[str, ...]  # pytest arguments: the fast tests that cover the module
    only: tuple[str, ...] = ()  # mutate only inside these functions ("Class.method" for a method)
    skip: tuple[str, ...] = ()  # or everything but these top-level names


BOUNDARIES = "tests/runtime/test_boundaries.py"
MODULES = [
    Module("cvm_rules", "dialects/cvm_rules.py",
           (BOUNDARIES, "tests/dialects/test_cvm.py", "tests/runtime/test_builder.py",
            "tests/runtime/test_model_files.py", "tests/runtime/test_api_corpus.py",
            "tests/runtime/test_reference_ops.py", "-m", "not compiled"),
           skip=("OP_ATTRS", "_SHIFT", "_REDUCE", "_a", "AttrSpec", "_Required", "REQUIRED", "format_attr")),
    Module("reference", "runtime/references/cvm.py",
           ("tests/runtime/test_reference_ops.py", "tests/runtime/test_api_corpus.py",
            f"{BOUNDARIES}::test_nms_iou_overflow_branch_on_every_path",
            f"{BOUNDARIES}::test_nms_iou_at_the_threshold_and_its_union",
            f"{BOUNDARIES}::test_nms_iou_at_the_bound_of_the_int64_branch",
            f"{BOUNDARIES}::test_nms_iou_just_past_the_bound_of_the_int64_branch",
            f"{BOUNDARIES}::test_nms_top_k_and_max_output_size_bounds",
            f"{BOUNDARIES}::test_reference_conv_sums_past_2_to_53_are_exact",
            f"{BOUNDARIES}::test_reference_division_by_zero_gives_0_without_dividing_by_zero",
            f"{BOUNDARIES}::test_reference_nms_of_two_unit_boxes_and_pooling_below_minus_2_to_30",
            f"{BOUNDARIES}::test_nms_iou_of_boxes_whose_union_is_below_100",
            f"{BOUNDARIES}::test_precision_limits_1_and_32_run")),
    Module("cinn_reference", "runtime/references/cinn.py",
           ("tests/runtime/test_cinn_reference.py", "tests/runtime/test_cinn_builder.py",
            "tests/runtime/test_cinn_onnx.py")),
    Module("value_bits", "passes/cvm_value_bits.py",
           ("tests/passes/test_cvm_value_bits.py",
            "tests/runtime/test_boundaries.py::test_int16_path_at_16_bits_and_not_at_17",
            "tests/runtime/test_boundaries.py::test_dense_on_16_bit_values_matches_a_hand_computed_sum",
            "tests/passes/test_convert_cvm_to_loops.py", "tests/passes/test_dot_elements.py",
            "tests/passes/test_mmk.py::test_data_provably_in_0_127_takes_u8s8_with_avx2_and_one_past_int16"),
           only=("node_bits", "keeps_nonnegative", "ValueBits.bits", "ValueBits.of", "ValueBits._alias",
                 "ValueBits._visit")),
    Module("pack_operands", "passes/cvm_pack_operands.py",
           ("tests/runtime/test_boundaries.py::test_int16_path_at_16_bits_and_not_at_17",
            "tests/passes/test_convert_cvm_to_loops.py", "tests/passes/test_dot_elements.py",
            "tests/passes/test_mmk.py::test_an_int16_conv_with_a_param_weight_takes_the_blocked_weight",
            "tests/passes/test_mmk.py::test_data_provably_in_0_127_takes_u8s8_with_avx2_and_one_past_int16",
            "tests/passes/test_mmk.py::test_the_int16_bound_and_one_past",
            "tests/passes/test_vnni_tier.py::test_a_block_is_the_channels_rounded_to_16_at_most_64",
            "tests/passes/test_vnni_tier.py::test_the_bounds_that_pick_the_tier",
            "tests/runtime/test_cuda_schedule.py::test_packed_elements_on_the_gpu"),
           only=("fits_u8s8", "dot_elements", "dot_packing", "PackDotOperands.match_and_rewrite")),
    Module("nms", "passes/loops/ops.py",
           ("tests/runtime/test_boundaries.py::test_nms_iou_overflow_branch_on_every_path",
            "tests/runtime/test_boundaries.py::test_nms_iou_at_the_threshold_and_its_union",
            "tests/runtime/test_boundaries.py::test_nms_iou_at_the_bound_of_the_int64_branch",
            "tests/runtime/test_boundaries.py::test_nms_iou_just_past_the_bound_of_the_int64_branch",
            "tests/runtime/test_boundaries.py::test_nms_top_k_and_max_output_size_bounds",
            "tests/runtime/test_boundaries.py::test_nms_iou_of_boxes_whose_union_is_below_100",
            "tests/passes/test_convert_cvm_to_loops.py::test_detection_ops",
            "tests/runtime/test_cpu_corpus.py", "-k", "nms or detection or non_max or get_valid"),
           only=("_iou", "non_max_suppression", "get_valid_counts")),
]  # fmt: skip


# ----------------------------------------------------------------------------------------------------------------
# One test run (the test command of the sessions: `run.py --pytest ARGS`)
# ----------------------------------------------------------------------------------------------------------------


def run_pytest(args: list[str]) -> int:
    """pytest in the current directory (a worker copy) with a fresh JIT cache and no bytecode written."""
    with tempfile.TemporaryDirectory(prefix="cvmc-mutant-cache-") as cache:
        env = dict(os.environ, CVMC_CACHE_DIR=cache, PYTHONDONTWRITEBYTECODE="1")
        return subprocess.call([sys.executable, "-m", "pytest", *args], env=env)


# ----------------------------------------------------------------------------------------------------------------
# Worker copies and sessions
# ----------------------------------------------------------------------------------------------------------------


def make_copy(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")  # fmt: skip
    for f in filter(None, files):
        src = ROOT / f
        if src.is_symlink():  # the committed `cvmc/<layer>` links, relative: the copy's own folders
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            (dest / f).symlink_to(src.readlink())
        elif src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def selected_lines(source: str, module: Module) -> list[tuple[int, int]]:
    """The line ranges (inclusive) that may be mutated."""
    tree = ast.parse(source)
    if module.only:
        ranges = []
        for node in tree.body:
            defs = [(node.name, node)] if isinstance(node, ast.FunctionDef) else []
            if isinstance(node, ast.ClassDef):
                defs = [(f"{node.name}.{n.name}", n) for n in node.body if isinstance(n, ast.FunctionDef)]
            ranges += [(n.lineno, n.end_lineno or n.lineno) for name, n in defs if name in module.only]
        assert len(ranges) == len(module.only), f"{module.path}: not all of {module.only} found"
        return ranges
    ranges = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Expr):
            continue
        names = {getattr(node, "name", None)} | {t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)}
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        if not names & set(module.skip):
            ranges.append((node.lineno, node.end_lineno or node.lineno))
    return ranges


Span = tuple[tuple[int, int], tuple[int, int]]


def _span(node: ast.AST) -> Span:
    return (node.lineno, node.col_offset), (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def excluded(source: str) -> tuple[list[Span], list[Span], set[tuple[int, int]]]:
    """Where mutants are left out, for time (30 minutes on 2 cores): (1) inside f-strings (they change a message
    only; the key words of messages are tested by the reason tests), and for NumberReplacer, which makes two
    mutants per literal, (2) any literal outside a comparison or a module-level constant (a bound lives there)
    and (3) any literal that indexes or slices (`s[0]`, `x[2:6]`), even inside a comparison. Returns (f-string
    spans, spans where numbers are mutated, index literal positions)."""
    tree = ast.parse(source)
    fstrings = [_span(n) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)]
    numbers = [_span(n) for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    numbers += [_span(n) for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)]
    indices = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            for c in ast.walk(node.slice):
                if isinstance(c, ast.Constant) and isinstance(c.value, int):
                    indices.add((c.lineno, c.col_offset))
    return fstrings, numbers, indices


def _within(pos: tuple[int, int], spans: list[Span]) -> bool:
    return any(a <= pos <= b for a, b in spans)


def test_command(module: Module) -> str:
    """The shell-quoted test command of a module's sessions (cosmic-ray splits it with shlex)."""
    command = shlex.join([sys.executable, str(Path(__file__).relative_to(ROOT)), "--pytest", *PYTEST, *module.tests])
    assert '"' not in command and "\\" not in command, command  # it goes into a TOML string as it is
    return command


def prepare_sessions(module: Module, workers: list[Path]) -> int:
    """A session per worker, each running its share of the selected mutants; the number selected."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    first = workers[0]
    config = f"""[cosmic-ray]
module-path = "{module.path}"
timeout = 120.0
excluded-modules = []
test-command = "{test_command(module)}"
[cosmic-ray.distributor]
name = "local"
"""
    for w in workers:
        (w / f"{module.name}.toml").write_text(config)
    session = first / f"{module.name}.sqlite"
    session.unlink(missing_ok=True)
    subprocess.run([str(Path(sys.executable).with_name("cosmic-ray")), "init", f"{module.name}.toml",
                    session.name], cwd=first, check=True)  # fmt: skip
    source = (first / module.path).read_text()
    ranges = selected_lines(source, module)
    fstrings, numbers, indices = excluded(source)
    with use_db(str(session), WorkDB.Mode.open) as db:
        keep, skip = [], []
        for item in db.pending_work_items:
            (m,) = item.mutations
            inside = any(lo <= m.start_pos[0] and m.end_pos[0] <= hi for lo, hi in ranges)
            pos = tuple(m.start_pos)
            number = m.operator_name.endswith("NumberReplacer")
            left_out = _within(pos, fstrings) or number and (pos in indices or not _within(pos, numbers))
            (keep if inside and not left_out and OPERATORS.match(m.operator_name) else skip).append(item.job_id)
        if skip:
            db.set_multiple_results(skip, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    for k, w in enumerate(workers[1:], 1):
        shutil.copy(session, w / session.name)
    for k, w in enumerate(workers):  # worker k runs the mutants k, k + n, k + 2n, ... of the kept ones
        others = [job for i, job in enumerate(keep) if i % len(workers) != k]
        if others:
            with use_db(str(w / session.name), WorkDB.Mode.open) as db:
                db.set_multiple_results(others, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return len(keep)


def forget_survivors(session: Path) -> int:
    """Make the session's surviving mutants pending again (for --retry); how many they are."""
    with sqlite3.connect(session) as db:
        return db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'").rowcount


@dataclass
class Outcome:
    killed: int = 0
    survived: int = 0
    incompetent: int = 0
    survivors: list[tuple[str, str, str]] | None = None  # (operator, removed line, added line)


def collect(module: Module, workers: list[Path]) -> Outcome:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    out = Outcome(survivors=[])
    for w in workers:
        with use_db(str(w / f"{module.name}.sqlite"), WorkDB.Mode.open) as db:
            for item, result in db.completed_work_items:
                if result.worker_outcome == WorkerOutcome.SKIPPED:
                    continue
                if result.test_outcome == TestOutcome.KILLED or result.worker_outcome == WorkerOutcome.ABNORMAL:
                    out.killed += 1
                elif result.test_outcome == TestOutcome.SURVIVED:
                    out.survived += 1
                    out.survivors.append((item.mutations[0].operator_name.removeprefix("core/"),
                                          *diff_lines(result.diff or "")))  # fmt: skip
                else:
                    out.incompetent += 1
    return out


def diff_lines(diff: str) -> tuple[str, str]:
    removed = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(removed), " / ".join(added)


# ----------------------------------------------------------------------------------------------------------------
# The list of equivalent mutants
# ----------------------------------------------------------------------------------------------------------------

ENTRY = re.compile(r"^- `(?P<op>[^`]+)`: `(?P<old>.*?)` -> `(?P<new>.*?)`: (?P<why>.+)$")


def listed_equivalents() -> dict[str, set[tuple[str, str, str]]]:
    """module name -> the (operator, old line, new line) of mutants listed as equivalent, from equivalent.md."""
    listed: dict[str, set[tuple[str, str, str]]] = {}
    section = None
    for line in EQUIVALENT.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].split()[0]
            listed.setdefault(section, set())
        elif (m := ENTRY.match(line)) and section is not None:
            listed[section].add((m["op"], m["old"].replace("\\`", "`"), m["new"].replace("\\`", "`")))
    return listed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--pytest"]:
        return run_pytest(argv[1:])
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--module", action="append", choices=[m.name for m in MODULES])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--keep", help="a folder to keep the worker copies and sessions in")
    p.add_argument("--retry", help="a folder of kept sessions: run their survivors again against the current tests")
    a = p.parse_args(argv)
    modules = [m for m in MODULES if a.module is None or m.name in a.module]
    base = Path(a.retry or a.keep or tempfile.mkdtemp(prefix="cvmc-mutate-"))
    workers = sorted(base.glob("w*")) if a.retry else [base / f"w{k}" for k in range(a.workers)]
    for w in workers:
        if a.retry:  # the tests as they are now; the sources stay as the sessions mutated them
            shutil.rmtree(w / "tests")
            shutil.copytree(ROOT / "tests", w / "tests", ignore=shutil.ignore_patterns("__pycache__", "Output"))
            continue
        shutil.rmtree(w, ignore_errors=True)
        make_copy(w)
    listed = listed_equivalents()
    unlisted = 0
    start = time.perf_counter()
    try:
        for module in modules:
            t0 = time.perf_counter()
            baseline = subprocess.run(shlex.split(test_command(module)), cwd=workers[0], capture_output=True,
                                      text=True)  # fmt: skip
            if baseline.returncode != 0:  # every mutant would count as killed
                print(f"{module.name}: the tests fail without a mutant:\n{baseline.stdout[-3000:]}")
                return 2
            if a.retry:  # the module's test command as it is now, too
                for w in workers:
                    toml = w / f"{module.name}.toml"
                    toml.write_text(re.sub(r'(?m)^test-command = ".*"$', f'test-command = "{test_command(module)}"',
                                           toml.read_text()))
                selected = sum(forget_survivors(w / f"{module.name}.sqlite") for w in workers)
            else:
                selected = prepare_sessions(module, workers)
            exe = str(Path(sys.executable).with_name("cosmic-ray"))
            procs = [subprocess.Popen([exe, "exec", f"{module.name}.toml", f"{module.name}.sqlite"], cwd=w,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for w in workers]
            for proc in procs:
                proc.wait()
            out = collect(module, workers)
            scored = out.killed + out.survived
            score = 100 * out.killed / scored if scored else 100.0
            print(f"{module.name} ({module.path}): {selected} mutants, {out.killed} killed, {out.survived} survived,"
                  f" {out.incompetent} incompetent: score {score:.1f}% ({time.perf_counter() - t0:.0f}s)", flush=True)
            known = listed.get(module.name, set())
            for s in sorted(out.survivors or []):
                tag = "equivalent" if s in known else "NOT LISTED"
                unlisted += s not in known
                print(f"  {tag}: - `{s[0]}`: `{s[1]}` -> `{s[2]}`")
    finally:
        if not (a.keep or a.retry):
            shutil.rmtree(base, ignore_errors=True)
    print(f"{unlisted} surviving mutants not listed in {EQUIVALENT.relative_to(ROOT)}; "
          f"{time.perf_counter() - start:.0f}s in all")
    return 1 if unlisted else 0


if __name__ == "__main__":
    sys.exit(main())
