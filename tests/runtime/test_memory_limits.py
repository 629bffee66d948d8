"""Memory you can bound: `max_memory` refuses a model before allocating, the reference frees intermediates, and
running out of memory is a CVMRuntimeError naming what was being allocated."""

import json
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

import cvmc
from cvmc.dialects.cvm_rules import MAX_MEMORY
from cvmc.runtime.builder import CvmBuilder
from cvmc.runtime.frontend.graph import load_graph
from cvmc.runtime.references.cvm import peak_bytes, peak_live_bytes, run_graph

GIB = 1 << 30


def tile_chain(directory, reps=(1024, 512, 512), relus=2):
    """The probe of issue 10, in the runtime's 4 GiB storage plan: [1] tiled to 2^28 elements (1 GiB), then a
    chain of relus (files of under 1 KB)."""
    b = CvmBuilder()
    t = b.tile(b.create_input([1], precision=8), reps=reps)
    for _ in range(relus):
        t = b.relu(t)
    b.export(directory, [t])
    return directory / "model.json", directory / "params.bin"


@pytest.fixture(scope="module")
def tile_model(tmp_path_factory):
    return tile_chain(tmp_path_factory.mktemp("tile"))


@pytest.mark.parametrize("device", ["reference", "cpu"])
def test_a_model_needing_more_than_max_memory_is_refused_at_load(tile_model, device):
    with pytest.raises(cvmc.CVMLogicError) as e:
        cvmc.load_model(*tile_model, device=device, max_memory=GIB)
    # reference: two 1 GiB tensors live at once (a relu's input and output) and the relu's two int32 temporaries
    # (issue 30, F12); cpu: a 1 GiB arena (the relus run in place), the 4-byte input and the 1 GiB head a run
    # returns
    needed = 4 * GIB if device == "reference" else 2 * GIB + 4
    assert f"needs {needed} bytes of working memory" in str(e.value)
    assert f"the limit of {GIB} bytes" in str(e.value)


@pytest.mark.parametrize("device", ["reference", "cpu"])
def test_max_memory_at_the_bound_and_one_below(tmp_path, device):
    files = tile_chain(tmp_path, reps=(64, 64), relus=3)
    needed = cvmc.load_model(*files, device=device).memory_bytes
    assert needed is not None and needed >= 2 * 4 * 64 * 64
    m = cvmc.load_model(*files, device=device, max_memory=needed)
    assert np.array_equal(m.run(np.array([5]))[0], np.full((64, 64), 5))
    with pytest.raises(cvmc.CVMLogicError, match=f"needs {needed} bytes .* limit of {needed - 1} bytes"):
        cvmc.load_model(*files, device=device, max_memory=needed - 1)


@pytest.mark.parametrize("limit", [0, -1, True, 1.5, "1G", None])
def test_max_memory_must_be_a_positive_integer(tmp_path, limit):
    files = tile_chain(tmp_path, reps=(2,), relus=1)
    with pytest.raises(cvmc.CVMLogicError, match="expected 'max_memory' to be a positive number of bytes"):
        cvmc.load_model(*files, device="reference", max_memory=limit)


def test_the_default_limit_is_the_runtimes(tmp_path):
    m = cvmc.load_model(*tile_chain(tmp_path, reps=(2,), relus=1), device="reference")
    assert m.max_memory == MAX_MEMORY == 1 << 40


def test_the_reference_frees_each_intermediate_after_its_last_use():
    b = CvmBuilder()
    t = b.tile(b.create_input([1], precision=8), reps=(1024, 1024))  # 4 MiB tensors
    for _ in range(10):
        t = b.relu(t)
    graph = b.graph([t])
    assert peak_live_bytes(graph) == 2 * 4 * 1024 * 1024  # an op's input and its output
    tracemalloc.start()
    try:
        (out,) = run_graph(graph, np.array([3], np.int32))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(out, np.full((1024, 1024), 3))
    # At most one temporary of an op besides the live tensors; keeping all 11 would need 44 MiB.
    assert peak < 2 * peak_live_bytes(graph) < 11 * 4 * 1024 * 1024


def test_peak_live_bytes_keeps_heads_to_the_end_and_drops_dead_nodes():
    b = CvmBuilder()
    x = b.create_input([256], precision=8)  # 1 KiB per tensor
    first = b.relu(x)
    b.abs(first)  # read by nobody: dies at once
    last = b.negative(b.abs(first))
    graph = b.graph([first, last])
    # live after each node, in KiB: x 1; first 2 -> 1 (x's last use); dead abs 2 -> 1; abs 2; negative 3 -> 2
    # (first, a head, stays to the end)
    assert peak_live_bytes(graph) == 3 * 1024
    outs = run_graph(graph, np.arange(-128, 128, dtype=np.int32))
    assert np.array_equal(outs[0], np.maximum(np.arange(-128, 128), 0))
    assert np.array_equal(outs[1], -np.maximum(np.arange(-128, 128), 0))


def _one_op_graphs():
    """One operator of each family on a [4, 16, 64, 64] input (1 MiB of int32): its temporaries dominate."""
    rng = np.random.default_rng(3)

    def one(make, shape=(4, 16, 64, 64)):
        b = CvmBuilder()
        x = b.create_input(list(shape), precision=8)
        return b.graph([make(b, x)]), shape

    param = lambda b, shape, low=-100: b.create_param(rng.integers(low, 100, shape), 8)  # noqa: E731
    return {
        "relu": one(lambda b, x: b.relu(x)),
        "elemwise_add": one(lambda b, x: b.elemwise_add(x, b.relu(x))),
        "broadcast_div": one(lambda b, x: b.broadcast_div(x, param(b, (1, 16, 1, 1), 1))),
        "cvm_right_shift": one(lambda b, x: b.cvm_right_shift(x, precision=8, shift_bit=2)),
        "cvm_precision": one(lambda b, x: b.cvm_precision(x)),
        "sum": one(lambda b, x: b.sum(x, axis=[1])),
        "max_pool2d": one(lambda b, x: b.max_pool2d(x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1])),
        "conv2d": one(lambda b, x: b.conv2d(x, param(b, (16, 16, 3, 3)), channels=16, kernel_size=[3, 3],
                                            padding=[1, 1])),
        "conv2d groups": one(lambda b, x: b.conv2d(x, param(b, (16, 4, 3, 3)), channels=16, kernel_size=[3, 3],
                                                   padding=[1, 1], groups=4)),
        "dense": one(lambda b, x: b.dense(x, param(b, (256, 4096)), units=256), shape=(64, 4096)),
        "upsampling": one(lambda b, x: b.upsampling(x, scale=2)),
    }


@pytest.mark.parametrize("name", list(_one_op_graphs()))
def test_the_reference_holds_no_more_than_peak_bytes_counts(name):
    """F12: `max_memory` on the reference device bounds what it really holds, the operators' numpy temporaries
    included (tracemalloc sees every numpy buffer); the live tensors alone are a fraction of it."""
    graph, shape = _one_op_graphs()[name]
    x = np.random.default_rng(5).integers(-127, 128, shape).astype(np.int32)
    tracemalloc.start()
    try:
        run_graph(graph, x)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak_live_bytes(graph) < held <= peak_bytes(graph)


def test_a_limit_the_tensors_fit_but_the_temporaries_do_not_is_refused(tmp_path):
    """F12: a 128 MiB relu chain held 256 MiB of tensors, and about 500 MB with its temporaries, yet a 300 MiB
    limit admitted it."""
    files = tile_chain(tmp_path, reps=(1 << 12, 1 << 12, 2), relus=2)  # 2**25 int32 values: 128 MiB a tensor
    graph = load_graph(*files)
    assert peak_live_bytes(graph) == 256 << 20 < 300 << 20 < peak_bytes(graph)
    with pytest.raises(cvmc.CVMLogicError, match="more than the limit of 314572800 bytes"):
        cvmc.load_model(*files, device="reference", max_memory=300 << 20)
    assert cvmc.load_model(*files, device="reference", max_memory=peak_bytes(graph)).max_memory == peak_bytes(graph)
    with pytest.raises(cvmc.CVMLogicError):
        cvmc.load_model(*files, device="reference", max_memory=peak_bytes(graph) - 1)


UNDER_A_LIMIT = """
import resource, sys
import numpy as np
import cvmc
files = [open(path, "rb").read() for path in ({graph!r}, {params!r})]  # the limit is for compiling and running
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
device = sys.argv[1]
try:
    m = cvmc.load_model(*files, device=device)
    m.run(np.array([1]))
    print("ran")
except cvmc.CVMError as e:
    print(type(e).__name__, e)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so it would count the forking pytest's memory
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("maxrss_kb", hwm.split()[1])
"""


@pytest.mark.parametrize(("device", "message"), [
    ("reference", "CVMRuntimeError node 1 ('tile_1', tile): out of memory computing its 1073741824-byte output"),
    ("cpu", "CVMRuntimeError out of memory setting up the cpu device for the model: its plan needs "
            f"{2 * GIB + 4} bytes of working memory"),
])  # fmt: skip
def test_under_a_memory_limit_the_tile_model_is_a_runtime_error(tile_model, device, message, tmp_path):
    """The probe under `ulimit -v` (1 GiB of address space): a clear error, and little memory touched."""
    script = textwrap.dedent(UNDER_A_LIMIT).format(limit=GIB, graph=str(tile_model[0]),
                                                   params=str(tile_model[1]))
    env = {"CVMC_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", script, device], capture_output=True, text=True, env=env,
                       timeout=300)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines[0] == message
    assert int(lines[1].split()[1]) < 512 * 1024  # peak RSS under 512 MiB (it is about 100 MB)


def test_out_of_memory_while_running_is_a_runtime_error(monkeypatch, tmp_path):
    m = cvmc.load_model(*tile_chain(tmp_path, reps=(4,), relus=1), device="reference")

    def exhausted(data):
        raise MemoryError

    monkeypatch.setattr(m, "_run", exhausted)
    with pytest.raises(cvmc.CVMRuntimeError, match="out of memory running the model on the reference device"):
        m.run(np.array([1]))


def test_tile_model_file_is_small(tile_model):
    """The probe's point: a kilobyte of JSON declares 3 GiB of tensors, within the runtime's limits."""
    doc = json.loads(tile_model[0].read_text())
    assert len(tile_model[0].read_bytes()) < 2048 and len(doc["nodes"]) == 4


def test_the_cuda_device_checks_its_plan_before_touching_the_device(tmp_path):
    """No GPU here: a device that fails on any use shows the plan is refused before compiling or allocating."""
    from cvmc.runtime.devices import cuda
    from cvmc.runtime.model import program_bytes

    class Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"device.{name} was used before the plan was checked")

    b = CvmBuilder()
    graph = b.graph([b.relu(b.tile(b.create_input([1], precision=8), reps=(64, 64)))])
    seen = []

    def refuse(program):
        seen.append(program_bytes(program))
        raise cvmc.CVMLogicError("refused")

    with pytest.raises(cvmc.CVMLogicError, match="refused"):
        cuda.compile_graph(graph, device=Untouchable(), check_plan=refuse)  # type: ignore[arg-type]
    cpu = cvmc.Model(graph, "cpu")
    assert seen == [cpu.memory_bytes] and seen[0] >= 4 + 2 * 4 * 64 * 64
