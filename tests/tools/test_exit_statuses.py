"""Every tool: exit status 0, 1 (logic error), 2 (runtime error) or 64 (usage error), listed by --help; a closed
output pipe ends it quietly (141, as SIGPIPE); never a traceback."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import CVM_CORPUS, DATA

from cvmc.runtime.builder import CvmBuilder
from cvmc.tools import cli, cvm_opt, cvm_run, cvm_task, cvm_translate

MLP = CVM_CORPUS / "model_digits_mlp_000"
BAD = CVM_CORPUS / "invalid_000"  # a logic error at load
LENET = DATA / "taskir" / "lenet"
GRAPH_IR = DATA.parent / "runtime" / "taskgraph_all_kinds.mlir"
TOOLS = {"cvm-run": cvm_run.main, "cvm-task": cvm_task.main, "cvm-translate": cvm_translate.main,
         "cvm-opt": cvm_opt.main}


def status(main, argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:  # argparse: --help, usage errors
        return e.code


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("doors")
    (d / "empty.task").write_bytes(b"")
    (d / "huge.task.txt").write_text(
        "blocks { id: 0 type: SI precision: INT_8 shape { nx: 100000 ny: 100000 nf: 1 } "
        "output_clusters { interfaces { edge_id: 0 } } }\n"
        "blocks { id: 1 type: OUTPUT precision: INT_8 shape { nx: 100000 ny: 100000 nf: 1 } "
        "input_clusters { interfaces { edge_id: 0 } } }\n"
        "edges { id: 0 src_block_id: 0 dst_block_id: 1 }\n")
    (d / "bad.mlir").write_text("taskgraph.graph {\n  taskgraph.si 0 INT_8 <f = -2> out [[]]\n}\n")
    (d / "garbage.mlir").write_text("func.func @f( {")
    (d / "latin1.mlir").write_bytes(b"\xff\xfe builtin.module {}")
    (d / "deep.mlir").write_text('"builtin.module"() ({' * 3000)
    (d / "ir.txt").write_text("builtin.module {}")
    (d / "empty.npy").write_bytes(b"")
    # found by tests/fuzz/readers.py: a header numpy's tokenizer gives up on (tokenize.TokenError)
    (d / "bad_header.npy").write_bytes(b"\x93NUMPY\x01\x00v\x00:{'des" + b"\xff" * 111 + b"cr': '<i4'an_order': False, "
                                       b"'shape        \n")
    # found by tests/fuzz/readers.py in a fresh clone's make test: a stack of 4-byte strings (dtype '<a4')
    np.save(d / "strings.npy", np.array([b"abcd"] * 3, dtype="S4"))
    # found by tests/fuzz/readers.py: an unterminated string literal (xDSL's lexer backtracked 2^n ways)
    # found by tests/fuzz/readers.py: a dense array of an element type xDSL cannot pack (NotImplementedError)
    (d / "i65.mlir").write_text("builtin.module attributes {a = array<i65: 1, 2>} {\n}\n")
    # found by tests/fuzz/readers.py: integer types past MLIR's widths (1 << width ran until memory ended; 5,000
    # digits failed Python's int conversion)
    (d / "wide.mlir").write_text("builtin.module attributes {a = 1 : i99999999999} {\n}\n")
    (d / "wider.mlir").write_text("builtin.module attributes {a = 1 : i" + "9" * 5000 + "} {\n}\n")
    # found by tests/fuzz/readers.py: a block named ^0 (xDSL's parser raised a ValueError)
    (d / "block0.mlir").write_text('"builtin.module"() ({\n^0:\n}) : () -> ()\n')
    (d / "open_string.mlir").write_text('"builtin.module"() {a = "' + "x" * 60 + "\n")
    os.mkfifo(d / "fifo")
    os.mkfifo(d / "silent")  # never written: a reader that waits for a writer waits for ever
    os.mkfifo(d / "silent.mlir")
    return d


CASES = [
    # (tool, arguments, status, a piece of the message on stderr)
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", MLP / "input.bin", "--device", "reference"], 0, ""),
    ("cvm-run", [BAD / "model.json", BAD / "params.bin", BAD / "input.bin"], 1, "CVMLogicError"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", "/dev/zero"], 1,
     "input '/dev/zero' holds more than 64 bytes (the model's input is 64 bytes)"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", MLP / "input.bin", "--max-memory", "100"], 1,
     "more than the limit of 100 bytes"),
    ("cvm-run", ["{d}/missing.json", MLP / "params.bin", "--gas"], 2, "missing.json"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", MLP / "input.bin", "-o", "{d}/no/such/dir/out"], 2,
     "cannot write"),
    ("cvm-run", [MLP / "model.json"], 64, "is not a folder: name the model folder, or model.json then params.bin"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin"], 64, "an input file is needed"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", "--max-memory", "-5"], 64, "--max-memory"),
    ("cvm-task", ["run", LENET / "lenet.task.txt", LENET / "i_0_0_0.dat"], 0, ""),
    ("cvm-task", ["run", "{d}/empty.task"], 1, "holds no blocks"),
    ("cvm-task", ["run", "{d}/huge.task.txt"], 1,
     "block 0: expected at most 1073741824 values in the block, got 10000000000 [100000, 100000, 1]"),
    ("cvm-task", ["run", LENET / "lenet.task.txt", "/dev/zero"], 1, "input '/dev/zero' holds more than 4096 bytes"),
    ("cvm-task", ["run", DATA / "taskir" / "prims" / "cvm.task.txt", "/dev/zero"], 1, "more than 0 bytes"),
    ("cvm-task", ["run", "{d}/bad.mlir"], 1, "expected shape 'f' >= 0, got -2"),
    ("cvm-task", ["run", "{d}/missing.task"], 2, "cannot read task file"),
    ("cvm-task", ["run", "nul\0.task"], 1, "the path holds a NUL character"),
    ("cvm-task", ["run", "{d}/garbage.mlir"], 2, "cannot parse"),
    ("cvm-task", ["run", LENET / "lenet.task.txt", "--steps", "0"], 64, "expected a positive integer, got '0'"),
    ("cvm-task", ["run", LENET / "lenet.task.txt", "--steps", "x"], 64, "expected a positive integer, got 'x'"),
    ("cvm-task", [], 64, "required"),
    ("cvm-translate", ["--import-cvm", MLP / "model.json", MLP / "params.bin", "-o", "{d}/m.mlir"], 0, ""),
    ("cvm-translate", ["--import-cvm", BAD / "model.json", BAD / "params.bin"], 1, "CVMLogicError:"),
    ("cvm-translate", ["--import-task", "{d}/empty.task"], 1, "holds no blocks"),
    ("cvm-translate", ["--export-task", "{d}/bad.mlir", "-o", "{d}/x.task"], 1, "expected shape 'f' >= 0"),
    ("cvm-translate", ["--export-cvm", "{d}/missing.mlir", "-o", "{d}/out"], 2, "cannot read IR file"),
    ("cvm-translate", ["--export-cvm", "/", "-o", "{d}/out"], 2, "cannot read IR file '/'"),
    ("cvm-translate", ["--import-task", "{d}/garbage.mlir"], 2, "cannot parse task file"),
    ("cvm-translate", ["--export-cvm", "{d}/bad.mlir"], 64, "an export needs -o"),
    ("cvm-opt", [GRAPH_IR, "-o", "{d}/out.mlir"], 0, ""),
    ("cvm-opt", ["{d}/bad.mlir"], 1, "expected shape 'f' >= 0, got -2"),
    ("cvm-opt", ["{d}/garbage.mlir"], 2, "CVMRuntimeError:"),
    ("cvm-opt", ["{d}/missing.mlir"], 2, "cannot read input file"),
    ("cvm-opt", ["--no-such-option"], 64, "unrecognized arguments"),
    ("cvm-opt", [GRAPH_IR, "-t", "nope"], 64, "invalid choice"),
    ("cvm-opt", [GRAPH_IR, "-p", "no-such-pass"], 64, "cvm-opt: error: unknown pass 'no-such-pass' in -p"),
    ("cvm-opt", [GRAPH_IR, "-p", "cvm-fuse{{bad=1}}"], 64, "cvm-opt: error: Provided arguments"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", MLP / "input.bin", "--device", "gpu"], 64,
     "argument --device: invalid choice: 'gpu'"),
    # issue 30, F9 and F13: bad input is a status and a message of its own, never "internal error" nor a hang
    ("cvm-opt", ["{d}/latin1.mlir"], 2, "the input is not UTF-8 text (invalid start byte at byte 0)"),
    ("cvm-opt", ["{d}/deep.mlir"], 2, "the input is nested too deeply to be read"),
    ("cvm-opt", ["{d}/ir.txt"], 64, "cannot tell the format of"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", "--batch", "{d}/empty.npy", "-o", "{d}/o.npy"], 2,
     "an empty file, not a .npy array"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", "--batch", "{d}/bad_header.npy", "-o", "{d}/o.npy"], 2,
     "not a .npy array (TokenError"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", "--batch", "{d}/strings.npy", "-o", "{d}/o.npy"], 2,
     "expected an array of numbers, got dtype '|S4'"),
    ("cvm-opt", ["{d}/wide.mlir"], 2, "type expected"),
    ("cvm-opt", ["{d}/wider.mlir"], 2, "type expected"),
    ("cvm-translate", ["--export-cvm", "{d}/wide.mlir", "-o", "{d}/out"], 2, "type expected"),
    ("cvm-opt", ["{d}/block0.mlir"], 2, "cannot parse the input: ValueError: ('Invalid Block name format `0`."),
    ("cvm-translate", ["--export-cvm", "{d}/block0.mlir", "-o", "{d}/out"], 2, "ValueError: ('Invalid Block name"),
    ("cvm-task", ["run", "{d}/block0.mlir"], 2, "ValueError: ('Invalid Block name"),
    ("cvm-opt", ["{d}/i65.mlir"], 2, "NotImplementedError: Format not implemented for i65"),
    ("cvm-opt", ["{d}/open_string.mlir"], 2, "End of file reached before closing string literal"),
    ("cvm-translate", ["--export-cvm", "{d}/open_string.mlir", "-o", "{d}/out"], 2, "closing string literal"),
    ("cvm-run", [MLP / "model.json", MLP / "params.bin", "--batch", "{d}/silent", "-o", "{d}/o.npy"], 2,
     "not a regular file (a .npy stack is mapped)"),
    ("cvm-run", ["{d}/silent", "{d}/silent", "--gas"], 2, "a FIFO no process wrote to or closed within 0.1 s"),
    ("cvm-opt", ["{d}/silent.mlir"], 2, "a FIFO no process wrote to"),
    ("cvm-task", ["run", "{d}/silent"], 2, "a FIFO no process wrote to"),
    ("cvm-translate", ["--export-cvm", "{d}/silent", "-o", "{d}/out"], 2, "a FIFO no process wrote to"),
]


@pytest.mark.parametrize(("tool", "args", "code", "message"), CASES,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_exit_status(tool, args, code, message, files, capsys, monkeypatch):
    from cvmc.runtime.frontend import files as readers

    monkeypatch.setattr(readers, "FIFO_WAIT_SECONDS", 0.1)  # the FIFOs here have no writer: refused, not waited on
    argv = [str(a).format(d=files) for a in args]
    assert status(TOOLS[tool], argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "internal error" not in err
    if code == 0:
        assert err == ""
    else:  # one form: `TOOL: LABEL: message`, the label the class of the status
        assert cli.error_line(tool, code, "") in err


def test_a_fifo_input_is_read_no_further_than_the_model_needs(files, capsys):
    """A FIFO that never ends (here fed by /dev/zero) is refused after the model's input size."""
    feeder = subprocess.Popen(["sh", "-c", f"cat /dev/zero > {files / 'fifo'}"])
    try:
        code = status(cvm_run.main, [MLP / "model.json", MLP / "params.bin", files / "fifo", "--device", "reference"])
    finally:
        feeder.kill()
        feeder.wait()
    assert code == 1 and "holds more than 64 bytes" in capsys.readouterr().err


@pytest.mark.parametrize("tool", ["cvm-opt", "cvm-translate", "cvm-task"])
def test_ir_files_are_read_with_a_bound(tool, monkeypatch, capsys):
    """/dev/zero as the IR or task file: refused after `files.MAX_FILE_BYTES` (1 GiB; 64 bytes here)."""
    from cvmc.runtime.frontend import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 64)
    argv = {"cvm-opt": ["/dev/zero", "-f", "mlir"], "cvm-translate": ["--export-cvm", "/dev/zero", "-o", "out"],
            "cvm-task": ["run", "/dev/zero"]}[tool]
    assert status(TOOLS[tool], argv) == 1
    assert "'/dev/zero' holds more than 64 bytes" in capsys.readouterr().err


@pytest.mark.parametrize("tool", TOOLS)
def test_help_lists_the_exit_statuses(tool, capsys):
    assert status(TOOLS[tool], ["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit status:" in out
    for code in (0, 1, 2, 64, 130, 141):
        assert f"\n  {code:<4} " in out


def test_usage_status_of_a_foreign_parser():
    assert cli.usage_status(SystemExit(2)) == 64
    assert cli.usage_status(SystemExit(0)) == 0
    assert cli.usage_status(SystemExit(None)) == 0
    assert cli.usage_status(SystemExit("message")) == 1


# --- a closed output pipe ------------------------------------------------------------------------------------


def _closed_pipe(argv, read_lines=0, env=None):
    p = subprocess.Popen([sys.executable, "-m", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    lines = [p.stdout.readline() for _ in range(read_lines)]
    p.stdout.close()  # as `| head -n read_lines` does
    err = p.stderr.read().decode()
    p.stderr.close()
    return p.wait(timeout=120), lines, err


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """relu of an input of 200000 int32 values: 1.3 MB of printed lines."""
    d = tmp_path_factory.mktemp("wide")
    b = CvmBuilder()
    b.export(d, [b.relu(b.create_input([200000], precision=16))])
    np.arange(200000, dtype="<i4").tofile(d / "in.bin")
    return d


@pytest.mark.parametrize("read_lines", [0, 2])
def test_cvm_run_ends_quietly_on_a_closed_pipe(wide, read_lines):
    code, lines, err = _closed_pipe(["cvmc.tools.cvm_run", wide / "model.json", wide / "params.bin",
                                     wide / "in.bin", "--raw", "--device", "reference"], read_lines)
    assert (code, err) == (cli.EX_PIPE, "")
    assert lines == [b"0\n", b"1\n"][:read_lines]


def test_cvm_task_streams_its_steps_and_ends_quietly_on_a_closed_pipe():
    """A million steps: the first values come at once (nothing is buffered), and `| head` ends the run."""
    expected = ["# step 1\n", *(LENET / "o_0_0_0.dat.txt").read_text().splitlines(keepends=True)[:3]]
    code, lines, err = _closed_pipe(["cvmc.tools.cvm_task", "run", LENET / "lenet.task.txt", LENET / "i_0_0_0.dat",
                                     "--steps", "1000000"], 4)
    assert (code, err) == (cli.EX_PIPE, "")
    assert [line.decode() for line in lines] == expected


@pytest.mark.parametrize("argv", [
    ["cvmc.tools.cvm_translate", "--import-cvm", MLP / "model.json", MLP / "params.bin"],
    ["cvmc.tools.cvm_opt", GRAPH_IR],
])  # fmt: skip
def test_ir_tools_end_quietly_on_a_closed_pipe(argv):
    code, _, err = _closed_pipe(argv)
    assert (code, err) == (cli.EX_PIPE, "")


def test_cvm_opt_reads_stdin_with_a_bound(monkeypatch, capsys):
    import io

    from cvmc.runtime.frontend import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 64)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b" " * 65)))
    assert status(cvm_opt.main, []) == 1
    assert "the input on stdin holds more than 64 bytes" in capsys.readouterr().err
    text = b"builtin.module {}\n//".ljust(63, b"x") + b"\n"  # 64 bytes: at the bound
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    assert status(cvm_opt.main, []) == 0
    assert capsys.readouterr().out.startswith("builtin.module")


def test_cvm_cache_ends_quietly_on_a_closed_pipe(tmp_path):
    """F8: `cvm-cache info | head -0` was a BrokenPipeError traceback and status 1."""
    env = {**os.environ, "CVMC_CACHE_DIR": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s")}
    for command in ("info", "clear"):
        code, _, err = _closed_pipe(["cvmc.tools.cvm_cache", command], env=env)
        assert (code, err) == (cli.EX_PIPE, ""), command


@pytest.mark.parametrize("argv", [
    ["cvmc.tools.cvm_run", MLP / "model.json", MLP / "params.bin", "--gas"],
    ["cvmc.tools.cvm_opt", GRAPH_IR],
    ["cvmc.tools.cvm_cache", "info"],
    ["cvmc.examples", "list"],
])  # fmt: skip
def test_a_closed_stdout_is_no_internal_error(argv, tmp_path):
    """F10: with stdout closed (`>&-`) every tool did its work and ended in "internal error: AttributeError"."""
    env = {**os.environ, "CVMC_CACHE_DIR": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s")}
    module, *args = map(str, argv)
    code = f"import sys, {module} as m; sys.exit(m.main({args!r}))"
    r = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=env, text=True, timeout=300, preexec_fn=lambda: os.close(1))
    assert (r.returncode, r.stderr) == (0, "")


def test_a_stream_past_the_limit_costs_the_limit_not_twice_it():
    """F13: /dev/zero as model.json peaked at 4.2 GB for a 2 GiB limit (the chunks read, then joined). With 384 MiB
    of address space to spare, a 256 MiB limit is refused as a logic error, not an out-of-memory."""
    code = textwrap.dedent("""
        import resource
        from cvmc.errors import CVMLogicError
        from cvmc.runtime.frontend import files
        size = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (size + (384 << 20), resource.RLIM_INFINITY))
        try:
            files.read_bounded("/dev/zero", "model file", 256 << 20)
        except CVMLogicError as e:
            print("refused:", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "refused: model file '/dev/zero' holds more than 268435456 bytes" in r.stdout, r.stderr[-2000:]
