"""`cvm-opt`: xDSL's opt driver with the project's dialects and passes registered.

    cvm-opt model.mlir -p cvm-infer-shapes,cvm-gas
    cvm-opt invalid.mlir --split-input-file --verify-diagnostics
    cvm-opt model.mlir -p cvm-to-loops -t llvm-ir     # the loop level printed as LLVM IR
    cvm-opt model.mlir -p cvm-to-gpu-loops -t cuda    # ... built for a CUDA GPU, printed as CUDA C
    cvm-opt model.mlir -p 'cvm-to-loops{target="x86:avx512-vnni"}'  # built for a target (default x86:avx2,
                                                      # whatever the machine; see loops.target.Target)
    cvm-opt --list-passes                             # cvmc's passes, one line each
    cvm-opt model.mlir --elide-elementsattrs-if-larger 16   # constants of more than 16 values elided
    cvm-opt model.mlir -t dot | dot -Tsvg > model.svg # the graph, shapes and precisions on the edges

The input (a file or stdin) is read up to `files.MAX_FILE_BYTES` (1 GiB). Exit status: 0, 1 for IR that does
not verify (a logic error), 2 for input that cannot be read or parsed or an internal failure, 64 for a usage
error (`cli.EXIT_STATUSES`).
"""

import argparse
import contextlib
import io
import os
import re
import sys
from typing import IO

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from cvmc.dialects import register_all_dialects
from cvmc.dialects.cvm_sched import CallOp
from cvmc.errors import CVMLogicError
from cvmc.passes import get_all_passes
from cvmc.runtime.frontend import files
from cvmc.tools import cli


def _kernels(module: ModuleOp) -> ModuleOp:
    """The loop-level kernels of a module; a host function calling them (as convert-cvm-to-loops writes) is
    set aside, since code generators print kernels only."""
    if any(isinstance(op, CallOp) for op in module.walk()):
        from cvmc.runtime.driver.host import read_host

        return read_host(module.clone())[1]
    return module


_HIGH_LEVEL = ("cvm.", "cinn.", "taskgraph.")


def _require_lowered(module: ModuleOp, target: str) -> None:
    """A code generator prints loop-level IR: name the first op of a higher level, and the pass that lowers it."""
    for op in module.walk():
        if op.name.startswith(_HIGH_LEVEL):
            lower = {"cvm.": "cvm-to-gpu-loops" if target == "cuda" else "cvm-to-loops",
                     "cinn.": "convert-cinn-to-loops",
                     "taskgraph.": "convert-taskgraph-to-loops"}[op.name[:op.name.index(".") + 1]]
            raise CVMLogicError(f"-t {target} prints loop-level IR, but the module holds '{op.name}': "
                                f"lower it first (hint: cvm-opt IN -p {lower} -t {target})")


def _require_built_for(module: ModuleOp, target: str, gpu: bool, lower: str) -> None:
    """The kernels were built for the printer's device (the module's `cvmc.target`, where it has one)."""
    from cvmc.dialects.cvmc import TargetAttr
    from cvmc.passes.loops.target import ATTRIBUTE, Target

    built = module.attributes.get(ATTRIBUTE)
    if built is None:
        return
    if not isinstance(built, TargetAttr):
        raise CVMLogicError(f"the module's {ATTRIBUTE}: expected a #cvmc.target<...>, got {built}")
    built_for = Target.of_attr(built)
    if (built_for.gpu is not None) != gpu:
        device = "a CUDA GPU" if gpu else "an x86 CPU"
        raise CVMLogicError(f"-t {target} prints kernels built for {device}, but the module's were built for "
                            f"{built_for}: lower with {lower} (hint: cvm-opt IN -p {lower} -t {target})")


def _print_llvm_ir(module: ModuleOp, out: IO[str]) -> None:
    from cvmc.codegen.llvm import emit_llvm

    _require_lowered(module, "llvm-ir")
    _require_built_for(module, "llvm-ir", False, "cvm-to-loops")
    out.write(str(emit_llvm(_kernels(module))))


def _print_cuda(module: ModuleOp, out: IO[str]) -> None:
    from cvmc.codegen.cuda import emit_cuda

    _require_lowered(module, "cuda")
    _require_built_for(module, "cuda", True, "cvm-to-gpu-loops")
    out.write(emit_cuda(_kernels(module)))


def _dot_label(t: object) -> str:
    """`1x64 p8` for `tensor<1x64xi32, #cvm.prec<8>>`; the type as printed for any other."""
    from xdsl.dialects.builtin import TensorType

    if isinstance(t, TensorType):
        shape = "x".join(str(d) for d in t.get_shape()) or "scalar"
        enc = t.encoding
        prec = getattr(enc, "precision", None)
        if prec is not None:
            p = getattr(prec, "value", prec)
            return f"{shape} p{getattr(p, 'data', p)}"
        return f"{shape} {t.element_type}"
    return str(t)


def _print_dot(module: ModuleOp, out: IO[str]) -> None:
    """The dataflow graph of each function as Graphviz: one node per op (params as boxes), one edge per use with
    the value's shape and precision."""
    def q(text: str) -> str:  # a label's `\n` is Graphviz's line break
        return '"' + text.replace('"', '\\"') + '"'

    out.write("digraph cvm {\n  rankdir=TB;\n  node [fontname=Helvetica, fontsize=10];\n"
              "  edge [fontname=Helvetica, fontsize=9];\n")
    ids: dict[object, str] = {}
    for f in module.walk():
        if not isinstance(f, func.FuncOp) or not f.body.blocks:
            continue
        block = f.body.blocks.first
        assert block is not None
        for arg in block.args:
            ids[arg] = f"n{len(ids)}"
            out.write(f"  {ids[arg]} [label={q('input ' + (arg.name_hint or ''))}, shape=ellipse];\n")
        for op in block.ops:
            ids[op] = f"n{len(ids)}"
            name = op.attributes.get("name") or op.properties.get("name")
            label = op.name + (f"\\n{getattr(name, 'data', '')}" if name is not None else "")
            shape = "box" if op.name == "cvm.param" else "ellipse" if op.name == "func.return" else "box, style=rounded"
            out.write(f"  {ids[op]} [label={q(label)}, shape={shape}];\n")
            for operand in op.operands:
                src = operand.owner if operand.owner in ids else operand
                if src in ids:
                    out.write(f"  {ids[src]} -> {ids[op]} [label={q(_dot_label(operand.type))}];\n")
    out.write("}\n")


def elide_large_constants(module: ModuleOp, limit: int) -> None:
    """Replace every dense constant of more than `limit` values by `dense_resource<__elided__>`, as MLIR's
    `--mlir-elide-elementsattrs-if-larger` prints it (for reading: the result cannot be parsed back whole)."""
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr

    def elided(a: object) -> object:
        if isinstance(a, DenseIntOrFPElementsAttr) and len(a) > limit:
            return DenseResourceAttr.from_params("__elided__", a.type)
        return a

    for op in module.walk():
        for table in (op.properties, op.attributes):
            for k, v in list(table.items()):
                new = elided(v)
                if new is not v:
                    table[k] = new  # type: ignore[assignment]


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, whole (its lines joined), never cut mid-sentence."""
    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    end = re.search(r"\.(\s|$)(?![^(]*\))", paragraph)  # a full stop outside parentheses
    return paragraph[:end.start() + 1] if end else paragraph


def list_passes() -> str:
    """cvmc's passes, one line each: the name and the first sentence of the pass's docstring."""
    return "".join(f"{name:<28} {first_sentence(factory().__doc__)}\n"
                   for name, factory in sorted(get_all_passes().items()))


_PLAIN_VALUE = re.compile(r"[-+\w.]+(,[-+\w.]+)*")
_OPTION = re.compile(r'([A-Za-z_][\w-]*)=("(?:\\.|[^"\\])*"|\[[^\]{}]*\]|[^\s{}"]+)')


def normalize_pipeline(spec: str) -> str:
    """A pass pipeline with the option values xDSL's lexer takes only quoted (`target=x86:avx512-vnni`) quoted,
    and a bracketed list (`dot_block=[8,32,256]`) as the comma list it means; what is unambiguous parses."""
    def option(m: re.Match[str]) -> str:
        key, value = m.group(1), m.group(2)
        if value.startswith('"'):
            return m.group(0)
        if value.startswith("[") and value.endswith("]") and _PLAIN_VALUE.fullmatch(value[1:-1].replace(" ", "")):
            return f"{key}={value[1:-1].replace(' ', '')}"
        if _PLAIN_VALUE.fullmatch(value) or "[" in value or "]" in value:
            return m.group(0)
        return f'{key}="{value}"'

    return re.sub(r"\{[^{}]*\}", lambda b: _OPTION.sub(option, b.group(0)), spec)


def _did_you_mean(name: str, names: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else " (cvm-opt --list-passes lists cvmc's)"


def _pipeline_error(spec: str, e: BaseException) -> str:
    """xDSL's multi-line ArgSpecParseError as one line: the pipeline, the column and the reason."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    where = next((ln for ln in lines if ln.startswith("pass-pipeline:")), "")
    column = where.rsplit(":", 1)[-1] if where else "?"
    reason = lines[-1].strip() if lines else type(e).__name__
    return f"cannot parse the pass pipeline {spec!r} at column {column}: {reason}"


# What each pass works on: a pass whose dialect the module does not hold does nothing (and cvm-opt says so).
_CONVERTS = {"cvm-to-loops": ("cvm", None), "cvm-to-gpu-loops": ("cvm", None)}


def _works_on(name: str) -> tuple[str | None, str | None]:
    """(the dialect a pass reads, the one it leaves) by its name; (None, None) for a pass of any IR."""
    if name in _CONVERTS:
        return _CONVERTS[name]
    m = re.fullmatch(r"convert-(cvm|cinn|taskgraph)-to-(\w+)", name)
    if m:
        return m.group(1), m.group(2) if m.group(2) in ("cvm", "cinn", "taskgraph") else None
    for dialect in ("cvm", "cinn", "taskgraph"):
        if name.startswith(dialect + "-"):
            return dialect, dialect
    return None, None


_HEX = re.compile(r'dense<"0x[0-9A-Fa-f]{64,}">')


def _short_diagnostic(text: str) -> str:
    """A diagnostic's IR with long hex constants elided (the caret lines keep their columns only before them)."""
    return _HEX.sub("dense_resource<__elided__>", text)


class CvmOptMain(xDSLOptMain):
    version_format = cli.version_line("cvm-opt").replace("{", "{{").replace("}", "}}")

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.prog = "cvm-opt"
        arg_parser.epilog = cli.EXIT_STATUSES
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.add_argument("--list-passes", action="store_true",
                                help="list cvmc's passes, one line each, and exit")
        arg_parser.add_argument("--elide-elementsattrs-if-larger", metavar="N", type=int, default=None,
                                help="print constants of more than N values as dense_resource<__elided__>")
        # xDSL's `-v` is `--version`; every cvmc tool's `-v` is `--verbose` (cli.add_common_arguments)
        version = arg_parser._option_string_actions.pop("-v")
        version.option_strings = [s for s in version.option_strings if s != "-v"]
        arg_parser.add_argument("-v", "--verbose", action="count", default=0, help=cli.VERBOSE_HELP)

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input, read whole but at most MAX_FILE_BYTES of it (a FIFO or /dev/zero ends in an error)."""
        cli.linear_mlir_lexer()
        path = self.args.input_file
        if path is None:
            limit = files.MAX_FILE_BYTES
            data = sys.stdin.buffer.read(limit + 1)
            if len(data) > limit:
                raise CVMLogicError(f"the input on stdin holds more than {limit} bytes (the limit)")
            return io.BytesIO(data), "mlir"
        extension = os.path.splitext(path)[1].replace(".", "")
        frontend = getattr(self.args, "frontend", None)
        if frontend is None and extension not in self.available_frontends:
            raise cli.UsageError(f"cannot tell the format of {path!r} from its extension: name a file "
                                 f"{' or '.join('.' + f for f in sorted(self.available_frontends))}, or pass "
                                 f"-f/--frontend")
        return io.BytesIO(files.read_bounded(path, "input file")), extension

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        return cli.parsed(lambda: super(CvmOptMain, self).parse_chunk(chunk, file_extension, start_offset),
                          "the input")

    def register_all_dialects(self):
        super().register_all_dialects()
        register_all_dialects(self.ctx)

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets["llvm-ir"] = _print_llvm_ir
        self.available_targets["cuda"] = _print_cuda
        self.available_targets["dot"] = _print_dot

    outputs: contextlib.ExitStack | None = None

    def prepare_output(self) -> IO[str]:
        """`-o FILE` through cvmc's one writer (`files.writing`): in place only once the run ends well."""
        if self.args.output_file is None or self.outputs is None:
            return super().prepare_output()
        return self.outputs.enter_context(files.writing_text(self.args.output_file, "the output"))

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.args.elide_elementsattrs_if_larger is not None:
            elide_large_constants(prog, self.args.elide_elementsattrs_if_larger)
        return super().output_resulting_program(prog)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def setup_pipeline(self):
        """xDSL's pipeline, from the spec made unambiguous (`normalize_pipeline`); a spec that does not parse or
        names an unknown pass is a one-line usage error (with a "did you mean")."""
        from xdsl.utils.arg_spec import parse_pipeline
        from xdsl.utils.exceptions import ArgSpecParseError

        spec = self.args.passes
        if spec:
            self.args.passes = normalize_pipeline(spec)
            try:
                names = [p.name for p in parse_pipeline(self.args.passes)]
            except ArgSpecParseError as e:  # a BaseException: it would pass every `except Exception`
                raise cli.UsageError(_pipeline_error(spec, e)) from None
            for name in names:
                if name not in self.available_passes:
                    ours = sorted(get_all_passes())
                    raise cli.UsageError(f"unknown pass {name!r} in -p {spec!r}"
                                         f"{_did_you_mean(name, ours + sorted(self.available_passes))}")
            self.pass_names = names
        try:
            super().setup_pipeline()
        except ArgSpecParseError as e:
            raise cli.UsageError(_pipeline_error(spec, e)) from None

    def apply_passes(self, prog: ModuleOp):
        """The passes, after a warning for each that works on a dialect the module will not hold when it runs."""
        held = {op.name.split(".", 1)[0] for op in prog.walk()} & {"cvm", "cinn", "taskgraph"}
        for name in getattr(self, "pass_names", []):
            reads, leaves = _works_on(name)
            if reads is None:
                continue
            if reads not in held:
                print(f"cvm-opt: warning: pass '{name}' works on {reads} ops, and the module holds none when it "
                      f"runs: it does nothing", file=sys.stderr)
            elif leaves != reads:
                held.discard(reads)
                if leaves is not None:
                    held.add(leaves)
        super().apply_passes(prog)


def main(args: list[str] | None = None) -> int:
    def run() -> int:
        try:
            tool = CvmOptMain(description="cvmc's modular optimizer driver", args=args)
        except ValueError as e:  # a pass pipeline (-p) xDSL cannot parse
            raise cli.UsageError(str(e)) from None
        cli.setup_logging(tool.args)
        if tool.args.list_passes:
            sys.stdout.write(list_passes())
            return 0
        from xdsl.utils.exceptions import DiagnosticException

        try:
            with contextlib.ExitStack() as tool.outputs:
                tool.run()
        except DiagnosticException as e:  # the IR with a caret under the op, as xdsl-opt prints it
            for note in getattr(e, "__notes__", []):
                print(_short_diagnostic(note), file=sys.stderr)
            raise
        return 0

    try:
        return cli.run_tool("cvm-opt", run)
    except SystemExit as e:  # xDSL's own argparse parser: a usage error is status 64, not argparse's 2
        return cli.usage_status(e)


if __name__ == "__main__":
    sys.exit(main())
