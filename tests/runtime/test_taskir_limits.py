"""Task IR doors: shape limits like the CVM ones (at the bound and one past), an empty file, streamed steps, and
running out of memory as a CVMRuntimeError."""

import numpy as np
import pytest
from conftest import DATA
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from cvmc.dialects.taskgraph import MAX_DIM, MAX_MEMORY, MAX_SIZE, TaskGraph
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.frontend.taskir_files import find_graph, import_task
from cvmc.runtime.references import taskgraph as taskgraph_executor
from cvmc.runtime.references.taskgraph import TaskGraphExecutor, frame_values, input_frames

LENET = DATA / "taskir" / "lenet"


def verify(text: str) -> None:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(TaskGraph)
    Parser(ctx, text).parse_module().verify()


def si(block_id: int, shape: str) -> str:
    return f"taskgraph.si {block_id} INT_8 <{shape}> out [[]]\n"


def test_the_limits_are_the_cvm_ones():
    assert (MAX_DIM, MAX_SIZE, MAX_MEMORY) == (1 << 24, 1 << 30, 1 << 40)


def test_a_dimension_at_the_limit_and_one_past():
    verify("taskgraph.graph {\n" + si(0, f"f = {MAX_DIM}") + "}")
    with pytest.raises(VerifyException, match=f"expected shape 'f' <= {MAX_DIM}, got {MAX_DIM + 1}"):
        verify("taskgraph.graph {\n" + si(0, f"f = {MAX_DIM + 1}") + "}")


def test_a_block_size_at_the_limit_and_one_past():
    verify("taskgraph.graph {\n" + si(0, "y = 32768, x = 32768, f = 1") + "}")  # 2^30 values
    assert 13325 * 80581 == MAX_SIZE + 1
    with pytest.raises(VerifyException, match=f"expected at most {MAX_SIZE} values in the block, got {MAX_SIZE + 1}"):
        verify("taskgraph.graph {\n" + si(0, "y = 1, x = 13325, f = 80581") + "}")


def test_the_storage_of_a_graph_at_the_limit_and_one_past():
    """256 blocks of 2^30 int32 values are 2^40 bytes; one more value is past the limit."""
    full = "".join(si(i, "y = 32768, x = 32768, f = 1") for i in range(256))
    verify("taskgraph.graph {\n" + full + "}")
    message = f"storage blocks to hold at most {MAX_MEMORY} bytes, got {MAX_MEMORY + 4}"
    with pytest.raises(VerifyException, match=message):
        verify("taskgraph.graph {\n" + full + si(256, "f = 1") + "}")


def test_the_huge_block_of_the_probe_is_refused_at_import(tmp_path):
    """100000 x 100000: 37 GiB the executor would have asked for."""
    path = tmp_path / "huge.task.txt"
    path.write_text("blocks { id: 0 type: SI precision: INT_8 shape { nx: 100000 ny: 100000 nf: 1 } "
                    "output_clusters { } }")
    with pytest.raises(CVMLogicError, match=r"block 0: expected at most 1073741824 values in the block, got "
                       r"10000000000 \[100000, 100000, 1\]"):
        import_task(path)


@pytest.mark.parametrize("name", ["empty.task", "empty.task.txt"])
def test_an_empty_task_file_is_an_error(tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(CVMLogicError, match="holds no blocks"):
        import_task(tmp_path / name)


def test_task_files_are_read_with_a_bound(tmp_path, monkeypatch):
    from cvmc.runtime.frontend import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 64)
    with pytest.raises(CVMLogicError, match=r"task file '/dev/zero' holds more than 64 bytes"):
        import_task("/dev/zero")
    with pytest.raises(CVMLogicError, match=r"cannot read task file 'nul\\x00.task': the path holds a NUL"):
        import_task("nul\0.task")


def test_steps_are_yielded_one_at_a_time():
    module = import_task(LENET / "lenet.task.txt")
    graph = find_graph(module)
    assert frame_values(graph) == 1024
    x = np.frombuffer((LENET / "i_0_0_0.dat").read_bytes(), "<i4")
    executor = TaskGraphExecutor(graph)
    calls = []
    step = executor.step
    executor.step = lambda inputs=None: calls.append(1) or step(inputs)  # type: ignore[method-assign]
    steps = executor.iter_steps(10**9, input_frames(graph, x, 10**9))
    first = next(steps)
    assert len(calls) == 1 and [int(v) for v in next(iter(first.values()))][:2] == [-9382, -6940]


def test_running_out_of_memory_names_the_block(monkeypatch):
    module = import_task(LENET / "lenet.task.txt")
    graph = find_graph(module)
    executor = TaskGraphExecutor(graph)

    def exhausted(*args):
        raise MemoryError

    monkeypatch.setattr(taskgraph_executor, "compute_block", exhausted)
    x = np.zeros(1024, np.int32)
    with pytest.raises(CVMRuntimeError, match=r"block \d+: out of memory running its \w+ step"):
        executor.step({next(iter(input_frames(graph, x)[0])): x})
