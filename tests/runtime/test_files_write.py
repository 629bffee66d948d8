"""cvmc's one writer (`runtime.frontend.files.writing`, `write_file`, `Writer`; issue 36, N2, N7, N8, N9): every file
cvmc writes (store entries, `cvm-aot lib` and its header, `save_graph` behind `CvmBuilder.export`, `cvm-translate
--export-cvm` and `cvm-quantize -o`, quantize.json, task files, --dump and --emit-source files, `-o` of every
tool) goes to a temporary beside it and is renamed into place; a target that is a link, a FIFO, a folder or a
device is refused and left as it was; every OS error is one line naming the file."""

import os
import resource
import signal
import stat
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import CVM_CORPUS

from cvmc.errors import CVMRuntimeError
from cvmc.runtime.builder import CvmBuilder
from cvmc.runtime.devices import aot
from cvmc.runtime.engine import store
from cvmc.runtime.frontend import files
from cvmc.runtime.frontend.graph import save_graph

MLP = CVM_CORPUS / "model_digits_mlp_000"
ROOT = os.geteuid() == 0


def _builder() -> tuple[CvmBuilder, object]:
    b = CvmBuilder()
    x = b.create_input([1, 4], 8)
    return b, b.relu(b.dense(x, b.create_param(np.ones((2, 4), np.int32), 8), units=2, use_bias=False))


def _graph():
    b, y = _builder()
    return b.graph([y])


def _text_writer(path):
    with files.writing_text(path, "the file") as f:
        f.write("mine\n")


def _quantized_save(folder):
    from cvmc.runtime.quantize import Quantized

    Quantized.save(types.SimpleNamespace(graph=_graph(), facts=lambda: {"input_scale": 1.0}), folder)


def _task(path):
    from cvmc.runtime.frontend import taskir_pb2 as pb
    from cvmc.runtime.frontend.taskir_files import save_message

    save_message(pb.TaskGraph(), path)


def _dump(folder):
    from cvmc.runtime.driver.compile import StageDump

    StageDump(folder)("import.mlir", "builtin.module {}")


def _emit(device):
    def emit(folder):
        from cvmc.runtime.driver.compile import emit_sources

        emit_sources(_graph(), folder, device)

    return emit


# Each writer: the names it writes in a folder (the target planted under each in turn) and the write itself, given
# the folder. `store.write_file` is the raw one under the stores: an OSError (UnsafeTarget) for its callers to word.
ENTRY = aot.entry_path(".", "ab" * 16).name
WRITERS = {
    "write_file": (["out.bin"], lambda d: files.write_file(d / "out.bin", b"mine", "the file")),
    "writing (text)": (["out.txt"], lambda d: _text_writer(d / "out.txt")),
    "store.write_file": (["e.o"], lambda d: store.write_file(d, "e.o", b"mine", 0o600)),
    "aot.write_entry": ([ENTRY], lambda d: aot.write_entry(d, "ab" * 16, b"S" + b"x" * 8, b"k" * 32)),
    "cvm-aot --header": (["c_api.h"], lambda d: aot.write_output(d / "c_api.h", b"/* h */", 0o644, "the header")),
    "cvm-aot lib -o": (["libcvm.so"], lambda d: aot.write_library(d / "libcvm.so")),
    "save_graph": (["model.json", "params.bin"], lambda d: save_graph(_graph(), d)),
    "CvmBuilder.export": (["model.json", "params.bin"], lambda d: _builder()[0].export(d)),
    "quantize.json": (["model.json", "params.bin", "quantize.json"], _quantized_save),
    "task file": (["g.task.txt"], lambda d: _task(d / "g.task.txt")),
    "--dump": (["00-import.mlir"], _dump),
    "--emit-source cpu": (["kernels.ll", "host.mlir"], _emit("cpu")),
    "--emit-source cuda": (["kernels.cu", "host.mlir", "launches.json"], _emit("cuda")),
}
CASES = [pytest.param(name, target, id=f"{name}:{target}") for name, (targets, _) in WRITERS.items()
         for target in targets]


def _refused(name, folder, target, reason):
    """The writer `name` refuses `folder/target` with `reason`: a CVMRuntimeError naming the file, or the raw
    writer's UnsafeTarget."""
    if name == "store.write_file":
        with pytest.raises(files.UnsafeTarget, match=reason) as e:
            WRITERS[name][1](folder)
        assert e.value.filename == str(folder / target)
        return
    with pytest.raises(CVMRuntimeError, match=f"^cannot write .*/{target}': {reason}") as e:
        WRITERS[name][1](folder)
    assert len(str(e.value).splitlines()) == 1


def _no_temporaries(folder):
    assert not [p for p in os.listdir(folder) if p.startswith(files.TEMP_PREFIX)]


@pytest.mark.parametrize(("name", "target"), CASES)
def test_a_planted_link_is_refused_and_its_target_unchanged(tmp_path, name, target):
    """N2: `cvm-quantize -o DIR`, `--export-cvm`, `CvmBuilder.export` wrote through links planted in DIR."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"theirs")
    victim.chmod(0o600)
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / target)
    _refused(name, out, target, "it is a symbolic link, not a regular file")
    assert victim.read_bytes() == b"theirs" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert (out / target).is_symlink() and os.readlink(out / target) == str(victim)
    _no_temporaries(out)


@pytest.mark.parametrize(("name", "target"), CASES)
def test_a_fifo_and_a_folder_are_refused_without_blocking(tmp_path, name, target):
    """N7: `cvm-aot lib -o FIFO` renamed the library over the FIFO; no writer opens one (it could block)."""
    os.mkfifo(tmp_path / target)
    t0 = time.monotonic()
    _refused(name, tmp_path, target, "it is a FIFO, not a regular file")
    assert time.monotonic() - t0 < 20 and stat.S_ISFIFO(os.lstat(tmp_path / target).st_mode)
    os.unlink(tmp_path / target)
    (tmp_path / target).mkdir()
    (tmp_path / target / "inside").write_bytes(b"theirs")
    _refused(name, tmp_path, target, "it is a directory, not a regular file")
    assert (tmp_path / target / "inside").read_bytes() == b"theirs"
    _no_temporaries(tmp_path)


def _device(path: Path, like: str) -> int:
    """A character device at `path` that is the device `like` (as root, in a temporary folder); its rdev."""
    rdev = os.stat(like).st_rdev
    os.mknod(path, 0o600 | stat.S_IFCHR, rdev)
    return rdev


@pytest.mark.skipif(not ROOT, reason="making a device node needs root (and only root can replace one in /dev)")
@pytest.mark.parametrize(("name", "target"), CASES)
def test_a_device_is_not_replaced(tmp_path, name, target):
    """N7, as root: `cvm-aot lib -o /dev/full` replaced the device with the library. Here a node of /dev/full
    in a temporary folder stands for it."""
    rdev = _device(tmp_path / target, "/dev/full")
    _refused(name, tmp_path, target, "it is a character device, not a regular file")
    st = os.lstat(tmp_path / target)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == rdev
    _no_temporaries(tmp_path)


# ---- the tools' -o -------------------------------------------------------------------------------------------


def _run_tool(module, argv):
    from importlib import import_module

    main = import_module(f"cvmc.tools.{module}").main
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:
        return e.code


def _mlir(d: Path) -> Path:
    path = d / "in.mlir"
    if not path.exists():
        assert _run_tool("cvm_translate", ["--import-cvm", MLP / "model.json", MLP / "params.bin", "-o", path]) == 0
    return path


def _batch(d: Path) -> Path:
    path = d / "inputs.npy"
    np.save(path, np.zeros((2, 1, 64), np.int32))
    return path


TOOLS = {  # the target is "OUT" (a file) or "DIR/model.json" (a folder's file)
    "cvm-run -o": lambda d, out: ("cvm_run", [MLP / "model.json", MLP / "params.bin", MLP / "input.bin",
                                              "--device", "reference", "-o", out]),
    "cvm-run --batch -o": lambda d, out: ("cvm_run", [MLP / "model.json", MLP / "params.bin", "--batch", _batch(d),
                                                      "--device", "reference", "-o", out]),
    "cvm-translate -o": lambda d, out: ("cvm_translate", ["--import-cvm", MLP / "model.json", MLP / "params.bin",
                                                          "-o", out]),
    "cvm-translate --export-cvm": lambda d, out: ("cvm_translate", ["--export-cvm", _mlir(d), "-o", out.parent]),
    "cvm-opt -o": lambda d, out: ("cvm_opt", [_mlir(d), "-o", out]),
    "cvm-aot lib --header": lambda d, out: ("cvm_aot", ["lib", "-o", d / "libcvm.so", "--header", out]),
}


def _tool_target(name, d):
    return d / "model.json" if name == "cvm-translate --export-cvm" else d / ("out.npy" if "batch" in name else "out")


@pytest.mark.parametrize("kind", ["link", "fifo", "device"])
@pytest.mark.parametrize("name", list(TOOLS))
def test_every_tools_output_refuses_what_is_not_a_regular_file(tmp_path, capsys, name, kind):
    """Status 2 and one line naming the file; the link's target, the FIFO, the device (`-o /dev/full`) as they
    were."""
    d = tmp_path / "d"
    d.mkdir()
    out = _tool_target(name, d)
    module, argv = TOOLS[name](tmp_path, out)
    victim = tmp_path / "victim"
    victim.write_bytes(b"theirs")
    if kind == "link":
        os.symlink(victim, out)
    elif kind == "fifo":
        os.mkfifo(out)
    elif ROOT:
        rdev = _device(out, "/dev/full")
    else:
        pytest.skip("making a device node needs root")
    capsys.readouterr()
    assert _run_tool(module, argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write the " in err[0] and repr(str(out)) in err[0], err
    st = os.lstat(out)
    if kind == "link":
        assert stat.S_ISLNK(st.st_mode) and victim.read_bytes() == b"theirs"
    elif kind == "fifo":
        assert stat.S_ISFIFO(st.st_mode)
    else:
        assert stat.S_ISCHR(st.st_mode) and st.st_rdev == rdev
    assert not (d / "libcvm.so").exists()  # cvm-aot lib: a header it cannot write is refused before the build
    _no_temporaries(d)


def test_every_tools_output_is_written_in_place(tmp_path):
    for name, make in TOOLS.items():
        d = tmp_path / name.replace(" ", "_")
        d.mkdir()
        out = _tool_target(name, d)
        out.write_bytes(b"old")  # an existing regular file is replaced
        module, argv = make(tmp_path, out)
        assert _run_tool(module, argv) == 0, name
        assert out.read_bytes() != b"old" and not out.is_symlink(), name
        _no_temporaries(d)


# ---- what is written ---------------------------------------------------------------------------------------


def test_a_file_replaces_the_name_not_the_file_behind_a_hard_link(tmp_path):
    """The rename replaces the name: another name of the old file (a hard link) keeps the old bytes."""
    (tmp_path / "theirs").write_bytes(b"theirs")
    os.link(tmp_path / "theirs", tmp_path / "out")
    files.write_file(tmp_path / "out", b"mine", "the file")
    assert (tmp_path / "out").read_bytes() == b"mine" and (tmp_path / "theirs").read_bytes() == b"theirs"


def test_the_mode_is_the_umasks_as_open_gives_it_or_the_callers(tmp_path):
    old = os.umask(0o027)
    try:
        files.write_file(tmp_path / "a", "text", "the file")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o640
    files.write_file(tmp_path / "b", b"x", "the file", mode=0o755)
    assert stat.S_IMODE((tmp_path / "b").stat().st_mode) == 0o755


def test_a_failed_block_leaves_the_old_file_and_no_temporary(tmp_path):
    """ENOSPC in the middle of a streamed write: one line naming the file; the old file is untouched."""
    (tmp_path / "out").write_bytes(b"old")
    with pytest.raises(CVMRuntimeError, match=r"^cannot write the outputs '.*/out': No space left on device$"):
        with files.writing(tmp_path / "out", "the outputs") as f:
            f.write(b"partial")
            raise OSError(28, "No space left on device")
    with pytest.raises(ValueError, match="not ours"):
        with files.writing(tmp_path / "out", "the outputs") as f:
            raise ValueError("not ours")  # not an OSError: passed on as it is
    assert (tmp_path / "out").read_bytes() == b"old"
    _no_temporaries(tmp_path)


def test_a_stream_left_after_an_error_never_writes_to_a_later_file(tmp_path):
    """Text still buffered in a stream when its block failed is never flushed, later, into whatever file reuses the
    temporary's descriptor number."""
    import gc

    with pytest.raises(RuntimeError):
        with files.writing_text(tmp_path / "a", "the file") as f:
            f.write("pending")
            raise RuntimeError("the caller's")
    other = os.open(tmp_path / "b", os.O_WRONLY | os.O_CREAT, 0o600)  # most likely the same number
    try:
        del f
        gc.collect()
    finally:
        os.close(other)
    assert (tmp_path / "b").read_bytes() == b"" and not (tmp_path / "a").exists()
    _no_temporaries(tmp_path)


@pytest.mark.skipif(ROOT, reason="root writes in a folder without write permission")
def test_a_folder_that_cannot_be_written_is_one_line(tmp_path):
    (tmp_path / "ro").mkdir(mode=0o500)
    with pytest.raises(CVMRuntimeError, match=r"^cannot write the file '.*/ro/out': Permission denied$"):
        files.write_file(tmp_path / "ro" / "out", b"x", "the file")


def _limited(code: str, limit: int, *args) -> subprocess.CompletedProcess:
    """`code` run by Python under a file size limit of `limit` bytes (SIGXFSZ ignored: a write fails with EFBIG,
    as in a shell with `ulimit -f`), the model's cache off."""
    def limit_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "CVMC_CACHE_MAX_BYTES": "0"}
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                          preexec_fn=limit_size, timeout=300)


def test_a_file_past_the_size_limit_is_one_line_naming_it(tmp_path):
    """EFBIG (`ulimit -f`): the writer's error names the file; no temporary stays."""
    r = _limited("import sys; from cvmc.runtime.frontend import files; "
                 "files.write_file(sys.argv[1], b'x' * 100000, 'the outputs')", 4096, tmp_path / "out")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last == (f"cvmc.errors.CVMRuntimeError: cannot write the outputs {str(tmp_path / 'out')!r}: File too large "
                    "(the file size limit, `ulimit -f`)"), r.stderr
    assert os.listdir(tmp_path) == []


def test_cvm_run_past_the_size_limit_is_status_2_naming_the_file(tmp_path):
    r = _limited("import sys; from cvmc.tools.cvm_run import main; sys.exit(main(sys.argv[1:]))", 2,
                 MLP / "model.json", MLP / "params.bin", MLP / "input.bin", "--device", "reference", "-o",
                 tmp_path / "out")
    assert r.returncode == 2
    assert r.stderr.strip() == (f"cvm-run: CVMRuntimeError: cannot write the output {str(tmp_path / 'out')!r}: File "
                                "too large (the file size limit, `ulimit -f`)")


@pytest.mark.skipif(not os.path.exists("/usr/bin/cc") and not os.environ.get("CC"), reason="no C compiler")
def test_cvm_aot_lib_past_the_size_limit_is_one_line_naming_the_file(tmp_path):
    """N9: under `ulimit -f`, `cvm-aot lib` passed on cc's three-line crash text (a bug-report notice)."""
    r = _limited("import sys; from cvmc.tools.cvm_aot import main; sys.exit(main(sys.argv[1:]))", 50 * 1024,
                 "lib", "-o", tmp_path / "libcvm.so")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"cvm-aot: CVMRuntimeError: cannot write the C-API library "
                               f"{str(tmp_path / 'libcvm.so')!r}: File too large"), r.stderr
    assert not (tmp_path / "libcvm.so").exists()


def test_the_c_compilers_failure_is_one_line_naming_the_file(tmp_path, monkeypatch):
    """N9: any failure of cc is its first error line, with the file, not its whole text."""
    cc = tmp_path / "cc"
    cc.write_text("#!/bin/sh\necho 'x.c: In function f:' >&2\necho 'x.c:1:1: error: expected ;' >&2\n"
                  "echo 'compilation terminated.' >&2\nexit 1\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    with pytest.raises(CVMRuntimeError) as e:
        aot.write_library(tmp_path / "libcvm.so")
    assert str(e.value) == (f"the C compiler failed on the C-API library {str(tmp_path / 'libcvm.so')!r} (status 1): "
                            "x.c:1:1: error: expected ;")


# ---- stale temporaries ---------------------------------------------------------------------------------------


def test_the_aot_store_sweeps_the_temporaries_of_builds_that_died(tmp_path):
    """N8: a `cvm-aot build` killed mid-write left its temporary in the store for ever; the store now sweeps them
    as the JIT's cache sweeps its own (`files.sweep_temporaries`, one code): an hour old, not younger."""
    dead, live = tmp_path / f"{files.TEMP_PREFIX}dead{files.TEMP_SUFFIX}", tmp_path / f"{files.TEMP_PREFIX}live.tmp"
    for p in (dead, live):
        p.write_bytes(b"\x7fELF" + b"\0" * 1000)
    old = time.time() - files.STALE_TEMPORARY_SECONDS - 5
    os.utime(dead, (old, old))
    aot.write_entry(tmp_path, "ab" * 16, b"S" + b"x" * 8, b"k" * 32)
    assert not dead.exists() and live.exists() and (tmp_path / ENTRY).exists()


def test_the_cache_sweeps_the_same_temporaries(tmp_path, monkeypatch):
    from cvmc.runtime.engine import cache

    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path / "c"))
    c = cache.open_cache()
    assert c is not None
    dead = c.directory / f"{files.TEMP_PREFIX}dead{files.TEMP_SUFFIX}"
    dead.write_bytes(b"x")
    old = time.time() - files.STALE_TEMPORARY_SECONDS - 5
    os.utime(dead, (old, old))
    c.put("0" * 64, "o", b"code")
    assert not dead.exists()


def test_the_writer_names_its_temporaries_with_the_one_prefix(tmp_path, monkeypatch):
    seen = []
    real = files.Writer.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        seen.append(os.path.basename(self.tmp))

    monkeypatch.setattr(files.Writer, "__init__", spy)
    store.write_file(tmp_path, "e.o", b"x", 0o600)
    save_graph(_graph(), tmp_path)
    assert len(seen) == 3 and all(n.startswith(files.TEMP_PREFIX) and n.endswith(files.TEMP_SUFFIX) for n in seen)


def _tiny_onnx(folder: Path) -> list[str]:
    """A MatMul and a Relu as ONNX, its calibration beside it: `cvm-quantize`'s arguments before -o."""
    onnx = pytest.importorskip("onnx", reason="the quantizer reads ONNX (the quantize extra)")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 3])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    (folder / "m.onnx").write_bytes(model.SerializeToString())
    onnx.checker.check_model(model)
    np.save(folder / "calib.npy", np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32))
    return [str(folder / "m.onnx"), "--calibration", str(folder / "calib.npy")]


@pytest.mark.parametrize("target", ["model.json", "params.bin", "quantize.json", "report.txt"])
def test_cvm_quantize_writes_through_no_planted_link(tmp_path, capsys, target):
    """N2: `cvm-quantize -o DIR` (and `--report FILE`) wrote model.json, params.bin, quantize.json through links
    planted in DIR: now status 2, one line naming the file, the link's target unchanged."""
    args = _tiny_onnx(tmp_path)
    from cvmc.tools import cvm_quantize

    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"theirs")
    os.symlink(victim, out / target)
    capsys.readouterr()
    assert cvm_quantize.main([*args, "-o", str(out), "--report", str(out / "report.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{str(out / target)!r}: it is a symbolic link, not a regular file" in err[0], err
    assert victim.read_bytes() == b"theirs" and (out / target).is_symlink()
    os.unlink(out / target)
    assert cvm_quantize.main([*args, "-o", str(out), "--report", str(out / "report.txt")]) == 0
    assert {p.name for p in out.iterdir()} == {"model.json", "params.bin", "quantize.json", "report.txt"}
