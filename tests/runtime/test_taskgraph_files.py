"""Task IR files: every shared file imports, verifies and exports back to an equal message."""

import numpy as np
import pytest
from conftest import DATA, python_calls
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

from cvmc.dialects.taskgraph import (
    CcOp,
    ClusterAttr,
    EdgeOp,
    GraphOp,
    OutputOp,
    ParamKind,
    Precision,
    ShapeAttr,
    SiOp,
    SwOp,
    TaskGraph,
    TensorAttr,
)
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.frontend import taskir_pb2 as pb
from cvmc.runtime.frontend.taskir_files import (
    export_task,
    find_graph,
    graph_from_message,
    import_task,
    load_message,
    message_from_graph,
)

TASKIR = DATA / "taskir"
FILES = sorted(TASKIR.glob("*/*.task.txt"))
LENET = TASKIR / "lenet" / "lenet.task.txt"


def parse_ir(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(TaskGraph)
    return Parser(ctx, text).parse_module()


def test_the_shared_files_are_all_there():
    assert len(FILES) == 11
    assert {f.parent.name for f in FILES} == {"lenet", "prims"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_file_round_trips_through_the_dialect(path, tmp_path):
    message = load_message(path)
    module = import_task(path)  # verifies
    assert message_from_graph(find_graph(module)) == message
    # Text and binary exports read back to the same message.
    for name in ("out.task.txt", "out.task"):
        export_task(module, tmp_path / name)
        assert load_message(tmp_path / name) == message
    # The IR text form round trips too.
    again = parse_ir(str(module))
    again.verify()
    assert message_from_graph(find_graph(again)) == message


def test_text_export_matches_the_file_byte_for_byte(tmp_path):
    export_task(import_task(LENET), tmp_path / "lenet.task.txt")
    assert (tmp_path / "lenet.task.txt").read_text() == LENET.read_text()


def test_lenet_imports_the_expected_graph():
    graph = find_graph(import_task(LENET))
    assert len(graph.blocks) == 31 and len(graph.edges) == 30 and len(graph.groups) == 9
    cc = next(b for b in graph.blocks if isinstance(b, CcOp))
    assert (cc.id, cc.shape.extents()) == (11, {"y": 10, "x": 10, "f": 16, "r": 6, "ky": 5, "kx": 5,
                                                 "iy": 14, "ix": 14})  # fmt: skip
    assert cc.int_param(ParamKind.KERNEL_X) == 5
    weights = next(b for b in graph.blocks if isinstance(b, SwOp))
    assert weights.data is not None and weights.data.to_numpy().shape == (16, 6, 5, 5)
    # INT_8 weights are held as i8: the printed IR stays compact.
    assert "tensor<16x6x5x5xi8>" in str(graph)
    reshape = next(e for e in graph.edges if e.rearranges.data)
    assert (reshape.id, reshape.rearranges.data[0].ints(0).tolist()) == (32, [2, 1, 0])


def test_lenet_ir_prints_and_parses_fast():
    """Counted in Python calls, not timed (a loaded machine passes): printing takes 6,400 (7 ms), parsing and
    verifying 142,000 (70 ms); a printer or parser that went weight by weight would make a million."""
    module = import_task(LENET)
    printing, text = python_calls(lambda: str(module))
    parsing, again = python_calls(lambda: parse_ir(text))
    verifying, _ = python_calls(again.verify)
    assert len(text) < 200_000  # 61,706 weights, hex-encoded
    assert printing < 15_000 and parsing + verifying < 300_000, (printing, parsing, verifying)


def test_absent_and_zero_fields_keep_their_presence():
    message = load_message(TASKIR / "prims" / "ccmpb.task.txt")
    block = message.blocks[1]
    attr = next(a for a in block.attributes if a.type == pb.CMP)
    assert attr.HasField("int_value") and attr.int_value == 0
    # Set a dimension explicitly to 0 and drop an attribute's precision: both survive.
    block.shape.nr = 0
    attr.ClearField("precision")
    assert message_from_graph(graph_from_message(message)) == message
    assert "r = 0" in str(graph_from_message(message))


def test_unreadable_and_unparsable_files_are_runtime_errors(tmp_path):
    with pytest.raises(CVMRuntimeError, match="cannot read"):
        import_task(tmp_path / "missing.task")
    bad = tmp_path / "bad.task.txt"
    bad.write_text("blocks { id: 0 typo: 3 }")
    with pytest.raises(CVMRuntimeError, match="cannot parse"):
        import_task(bad)
    garbage = tmp_path / "bad.task"
    garbage.write_bytes(b"\xff\xff\xff")
    with pytest.raises(CVMRuntimeError, match="cannot parse"):
        import_task(garbage)


def test_incomplete_and_invalid_graphs_are_logic_errors(tmp_path):
    path = tmp_path / "g.task.txt"
    path.write_text("blocks { type: SI precision: INT_8 shape { nf: 2 } output_clusters { } }")
    with pytest.raises(CVMLogicError, match="block #0: missing 'id'"):
        import_task(path)
    path.write_text("blocks { id: 4 type: SI precision: INT_8 shape { nf: 2 nr: 3 } output_clusters { } }")
    with pytest.raises(CVMLogicError, match="block 4: expected no shape 'r' for SI, got 3"):
        import_task(path)
    path.write_text("blocks { id: 4 type: TASK_NULL precision: INT_8 shape { nf: 2 } }")
    with pytest.raises(CVMLogicError, match="block type TASK_NULL is not supported"):
        import_task(path)
    path.write_text("blocks { id: 1 type: SB precision: INT_8 shape { nf: 2 } output_clusters { } "
                    "data { dims: 3 int32_data: 1 int32_data: 2 } }")  # fmt: skip
    with pytest.raises(CVMLogicError, match=r"block 1, 'data': 'dims' \[3\] do not match the 2 values"):
        import_task(path)


def test_a_graph_built_in_python_exports():
    data = TensorAttr.from_numpy(np.array([1, -2, 3]), Precision.INT_8)
    graph = GraphOp([
        SiOp(0, Precision.INT_8, ShapeAttr.get(f=3), outputs=[ClusterAttr.get([0])], data=data),
        OutputOp(1, Precision.INT_8, ShapeAttr.get(f=3), inputs=[ClusterAttr.get([0])]),
        EdgeOp(0, 0, 1),
    ])  # fmt: skip
    ModuleOp([graph]).verify()
    message = message_from_graph(graph)
    assert list(message.blocks[0].data.int32_data) == [1, -2, 3]
    assert message.blocks[0].data.precision == pb.INT_8
    assert (message.edges[0].src_block_id, message.edges[0].dst_block_id) == (0, 1)
