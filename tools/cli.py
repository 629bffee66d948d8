"""What every cvmc command line shares: its exit statuses, usage errors, a closed output pipe, one-line errors.

    parser = cli.ArgumentParser(prog="cvm-run", description="...")    # usage errors exit 64
    return cli.run_tool("cvm-run", lambda: _run(args))                 # an exception becomes a status

Every console script runs its body through `run_tool`, so a tool never ends in a traceback: every failure is one
line on stderr, `TOOL: LABEL: message`, and one of the statuses of `EXIT_STATUSES` (each tool's --help lists them);
the label names the class (`CVMLogicError`, status 1; `CVMRuntimeError`, status 2) or is `error` for a usage error
(status 64, after the usage line, as argparse prints it). Every tool takes `--version` (one line, `TOOL (cvmc)
X.Y.Z`) and `-v`/`--verbose` (`add_common_arguments`, on the tool and on each of its subcommands). One rule for
the streams: results on stdout, everything else (errors, reports such as --stats, logs) on stderr.

A reader that closes the output early (`cvm-run ... | head`) ends the tool quietly with 141, as SIGPIPE ends a
C tool; a closed stdout (`>&-`) is /dev/null; input nested too deeply or not UTF-8 is a runtime error, never an
"internal error". Files are read through `cvmc.runtime.frontend.files` (bounded, FIFOs opened without blocking).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError

T = TypeVar("T")

EX_OK = 0
EX_LOGIC = CVMLogicError.status  # 1
EX_RUNTIME = CVMRuntimeError.status  # 2
EX_USAGE = 64  # sysexits.h
EX_PIPE = 128 + 13  # what a shell reports for a tool killed by SIGPIPE
EX_INTERRUPT = 128 + 2  # SIGINT

EXIT_STATUSES = f"""streams: stdout carries the results only (IR, values, paths written); stderr carries errors, reports
(--stats, a --batch throughput, cvm-opt's taskgraph-stats table), the log of -v and, on a terminal only, the
progress bars of long work.
errors: one line on stderr, `TOOL: CVMLogicError: message`, `TOOL: CVMRuntimeError: message`, or
`TOOL: error: message` for a usage error.

exit status:
  {EX_OK:<4} success
  {EX_LOGIC:<4} logic error: the model, the input or the caller breaks a rule (CVMLogicError)
  {EX_RUNTIME:<4} runtime error: a file that cannot be read or parsed, out of memory, or an internal failure
       (CVMRuntimeError); a model file's fault has the class cvm-runtime gives it (its first failing check:
       a VERIFY is 1, a CHECK 2: a params.bin cut at 10 bytes is 1, at 1,000 bytes 2)
  {EX_USAGE:<4} command-line usage error (EX_USAGE)
  {EX_INTERRUPT:<4} interrupted (Ctrl-C)
  {EX_PIPE:<4} the reader closed the output pipe (nothing is printed, as when SIGPIPE ends a tool)"""


class UsageError(Exception):
    """A command line that cannot be carried out as written (status 64)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the exit statuses as the epilog of --help and status 64 for a usage error."""

    def __init__(self, **kwargs):
        kwargs.setdefault("epilog", EXIT_STATUSES)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EX_USAGE, error_line(self.prog.split()[0], EX_USAGE, message) + "\n")  # a subcommand's too


def usage_status(e: SystemExit) -> int:
    """The status of an argparse exit from a parser we do not own (xDSL's): 64 for its usage errors (2)."""
    code = e.code if isinstance(e.code, int) else EX_LOGIC if e.code else EX_OK
    return EX_USAGE if code == 2 else code


def closed_pipe() -> int:
    """The reader went away: point stdout at /dev/null, so that what is still buffered does not fail again when
    the interpreter flushes it at exit, and end quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (captured in a test): nothing is buffered for it
        pass
    return EX_PIPE


# Two hazards of xDSL 0.74's MLIR parser on a stranger's text, both found by tests/fuzz/readers.py:
# - its lexer matches a string literal with `"(?:[^"\\\n\v\f]+|\\(...))*"`, a `+` inside a `*`: an unterminated
#   literal of n characters backtracks 2^n ways (30 characters: about a minute). The same language without the inner
#   `+` is matched in linear time.
# - an integer type of any width is taken (`i99999999999`: its bounds are computed as 1 << width, which runs until
#   memory ends; more digits fail Python's int conversion). MLIR's widths end at 2^24 - 1; at most 7 digits here.
_STRING_LITERAL = r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
_INTEGER_TYPE = r"^[su]?i(\d{1,7})$"


def linear_mlir_lexer() -> None:
    """Give xDSL's MLIR parser a string-literal pattern that cannot backtrack exponentially and an integer-type
    pattern of at most 7 digits (every tool that parses MLIR text calls this before it parses)."""
    import re

    from xdsl.parser.attribute_parser import AttrParser
    from xdsl.utils.mlir_lexer import MLIRLexer

    for cls, name, pattern in ((MLIRLexer, "_unescaped_characters_regex", _STRING_LITERAL),
                               (AttrParser, "_builtin_integer_type_regex", _INTEGER_TYPE)):
        current = getattr(cls, name, None)
        if current is not None and current.pattern != pattern:
            setattr(cls, name, re.compile(pattern))


def parsed(parse: Callable[[], T], what: str) -> T:
    """`parse()`'s module. xDSL's parser reports bad text as a ParseError, but some text reaches code that raises
    a plain exception instead (a ValueError for a block named `^0`, an OverflowError, a NotImplementedError):
    whatever the parser raises is the input's fault, a CVMRuntimeError naming it, never an internal error."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    try:
        return parse()
    except (ParseError, DiagnosticException, CVMError, MemoryError, RecursionError, UnicodeDecodeError):
        raise
    except Exception as e:
        raise CVMRuntimeError(f"cannot parse {what}: {type(e).__name__}: {e}") from None


def guard_streams() -> None:
    """Give each of stdin, stdout and stderr that the caller closed (`>&-`) /dev/null, at its descriptor and as
    `sys.stdin`/`sys.stdout`/`sys.stderr`: what the tool prints is discarded, as with `>/dev/null`, and no file it
    opens later takes descriptor 1 or 2 (where a print would write into it)."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
            except OSError:
                continue
            setattr(sys, name, open(fd, mode, closefd=False))
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode))


ELIDED_HINT = ("the input holds constants elided by --elide-elementsattrs-if-larger (dense_resource<__elided__>): "
               "such a print is for reading and cannot be read back; print the module without the option")


def _status_of(e: BaseException) -> tuple[int, str]:
    """The exit status and message of an exception a tool's body raised (a reader of elided constants says so)."""
    status, message = _status_and_message(e)
    if "dense_resource<__elided__>" in message and "should be of base attribute" in message:
        return status, ELIDED_HINT
    return status, message


def _status_and_message(e: BaseException) -> tuple[int, str]:
    if isinstance(e, CVMError):
        return e.status, str(e)
    if isinstance(e, UsageError):
        return EX_USAGE, str(e)
    if isinstance(e, MemoryError):
        return EX_RUNTIME, f"out of memory{': ' + str(e) if str(e) else ''}"
    if isinstance(e, RecursionError):  # a parser's recursion on input nested thousands deep
        return EX_RUNTIME, "the input is nested too deeply to be read"
    if isinstance(e, UnicodeDecodeError):
        return EX_RUNTIME, f"the input is not UTF-8 text ({e.reason} at byte {e.start})"
    if isinstance(e, NotImplementedError):  # what xDSL's parser does not support (`array<i65: ...>`)
        return EX_RUNTIME, f"not supported: {e}"
    if isinstance(e, OSError):
        where = f"{e.filename!r}: " if e.filename else ""
        return EX_RUNTIME, f"{where}{e.strerror or e}"
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    if isinstance(e, ParseError):  # text that is not IR
        return EX_RUNTIME, str(e)
    if isinstance(e, DiagnosticException):  # IR that does not verify
        return EX_LOGIC, str(e)
    return EX_RUNTIME, f"internal error: {type(e).__name__}: {e}"


LABELS = {EX_LOGIC: "CVMLogicError", EX_RUNTIME: "CVMRuntimeError"}


def error_line(prog: str, status: int, message: str) -> str:
    """The one form of a tool's error: `TOOL: LABEL: message`, the label the class of the status (`error` for a
    usage error)."""
    return f"{prog}: {LABELS.get(status, 'error')}: {message}"


def run_tool(prog: str, body: Callable[[], int]) -> int:
    """Run a tool's body and flush its output; any exception becomes one line on stderr (`error_line`) and a
    status. Closed standard streams are given /dev/null first (`guard_streams`)."""
    guard_streams()
    try:
        status = body()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return closed_pipe()
    except KeyboardInterrupt:
        return EX_INTERRUPT
    except Exception as e:
        status, message = _status_of(e)
        try:
            print(error_line(prog, status, message), file=sys.stderr)
        except OSError:
            pass
        return status


def version_line(prog: str) -> str:
    """`TOOL (cvmc) X.Y.Z`, the one line `--version` prints (`-v` logs the versions of what cvmc builds on)."""
    import cvmc

    return f"{prog} (cvmc) {cvmc.__version__}"


def dependency_versions() -> str:
    """The versions of what cvmc builds on, one line (`-v` logs it)."""
    from importlib import metadata

    def v(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "absent"

    return f"xdsl {v('xdsl')}, llvmlite {v('llvmlite')}, numpy {v('numpy')}, python {sys.version.split()[0]}"


VERBOSE_HELP = "log what is done on stderr (-v: each stage, -vv: debug)"


class _Subcommands(argparse._SubParsersAction):
    """A tool's subcommands, each with the tool's `--version` and `-v` (`TOOL SUB -v` as `TOOL -v SUB`)."""

    def __init__(self, *args, tool: str, **kwargs):
        kwargs.setdefault("parser_class", ArgumentParser)
        super().__init__(*args, **kwargs)
        self._tool = tool

    def add_parser(self, name, **kwargs):
        parser = super().add_parser(name, **kwargs)
        add_common_arguments(parser, tool=self._tool)
        return parser


def add_common_arguments(parser: argparse.ArgumentParser, tool: str | None = None) -> None:
    """`--version` and `-v` (repeatable: -v info, -vv debug), shared by every tool and by each subcommand of one
    (added after this call). On a subcommand (`tool` names the tool) `-v` leaves the tool's count alone unless
    given: a subparser's default would overwrite it."""
    parser.add_argument("--version", action="version", version=version_line(tool or parser.prog))
    parser.add_argument("-v", "--verbose", action="count", default=0 if tool is None else argparse.SUPPRESS,
                        help=VERBOSE_HELP)
    if tool is None:
        parser.register("action", "parsers", functools.partial(_Subcommands, tool=parser.prog))


def setup_logging(args: argparse.Namespace) -> None:
    """Send the `cvmc` loggers to stderr at the level `-v` asks for (warnings only without it)."""
    import logging

    level = {0: logging.WARNING, 1: logging.INFO}.get(getattr(args, "verbose", 0), logging.DEBUG)
    logger = logging.getLogger("cvmc")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
    if logger.isEnabledFor(logging.DEBUG):  # the versions' lookup (importlib.metadata) would slow every start
        logger.debug("%s", dependency_versions())
    import warnings

    # a library warning (the cache's) as one line, `TOOL: warning: message`, not Python's file:line and source line
    prog = os.path.basename(sys.argv[0]) if os.path.basename(sys.argv[0]).startswith("cvm-") else "cvmc"
    warnings.showwarning = lambda message, category, *rest, **kw: print(f"{prog}: warning: {message}",
                                                                        file=sys.stderr)
