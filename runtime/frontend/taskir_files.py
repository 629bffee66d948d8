"""Task IR files: `.task` (binary protobuf) and `.task.txt` (protobuf text format) <-> `taskgraph` IR.

    module = import_task("lenet.task.txt")     # a verified builtin.module holding one taskgraph.graph
    export_task(module, "lenet.task")          # binary, or text for a name ending in .txt

The schema is `taskir.proto` (package `tianjic_ir`) beside this file. Every field keeps its presence,
so a file imports and exports back to an equal message. An unreadable file is a CVMRuntimeError; a
graph that is incomplete or does not verify is a CVMLogicError.
"""

from __future__ import annotations

import os
from typing import TypeVar, cast

import numpy as np
from google.protobuf import text_format
from google.protobuf.message import DecodeError
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr, ModuleOp, StringAttr
from xdsl.utils.exceptions import VerifyException

from cvmc.dialects.taskgraph import (
    BLOCK_OP_OF_KIND,
    BiasType,
    BlockOp,
    ClusterAttr,
    EdgeOp,
    GraphOp,
    GroupOp,
    InterfaceAttr,
    ParamAttr,
    ParamKind,
    Precision,
    PrecisionAttr,
    RearrangeAttr,
    RearrangeKind,
    RearrangeKindAttr,
    ShapeAttr,
    TensorAttr,
)
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.frontend import taskir_pb2 as pb
from cvmc.runtime.frontend.files import read_bounded

# Shape fields of the file -> dimensions of the IR.
_SHAPE_FIELDS = {"nx": "x", "ny": "y", "nf": "f", "nr": "r", "nkx": "kx", "nky": "ky", "niy": "iy", "nix": "ix",
                 "n_branch": "n_branch"}  # fmt: skip

_Enum = TypeVar("_Enum", pb.TaskBlockType, pb.Precision, pb.AttributeType, pb.BiasType, pb.RearrangeInfoType)


def is_text_path(path: str | os.PathLike[str]) -> bool:
    """Whether a Task IR path names the text format (`.task.txt`, `.txt`)."""
    return os.fspath(path).endswith(".txt")


def load_message(path: str | os.PathLike[str]) -> pb.TaskGraph:
    """Read a `.task` or `.task.txt` file (at most `files.MAX_FILE_BYTES`) as a protobuf message."""
    message = pb.TaskGraph()
    data = read_bounded(path, "task file")
    try:
        if is_text_path(path):
            text_format.Parse(data.decode(), message)
        else:
            message.ParseFromString(data)
    except (text_format.ParseError, DecodeError, UnicodeDecodeError, RecursionError) as e:
        raise CVMRuntimeError(f"cannot parse task file {os.fspath(path)!r}: {e}") from None
    return message


def save_message(message: pb.TaskGraph, path: str | os.PathLike[str]) -> None:
    """Write a protobuf message as a `.task` or `.task.txt` file."""
    from cvmc.runtime.frontend.files import write_file

    data = text_format.MessageToString(message) if is_text_path(path) else message.SerializeToString()
    write_file(path, data, "task file")


# ---------------------------------------------------------------------------------------------------------
# message -> IR
# ---------------------------------------------------------------------------------------------------------


def _required(message, field: str, where: str) -> int:
    if not message.HasField(field):
        raise CVMLogicError(f"{where}: missing '{field}'")
    return getattr(message, field)


def _enum_name(enum, value: int, field: str, where: str) -> str:
    try:
        return enum.Name(value)
    except ValueError:
        raise CVMLogicError(f"{where}: unknown '{field}' {value}") from None


def _number(enum: type[_Enum], name: str) -> _Enum:
    """`enum.Value(name)`, typed as the enum class the stub gives its fields (the values are plain ints)."""
    return cast(_Enum, enum.Value(name))


def _shape(s: pb.Shape) -> ShapeAttr:
    dims = {ir: getattr(s, f) for f, ir in _SHAPE_FIELDS.items() if s.HasField(f)}
    return ShapeAttr.get(list(s.extra_dimensions), **dims)


def _opt_shape(message, field: str) -> ShapeAttr | None:
    return _shape(getattr(message, field)) if message.HasField(field) else None


def _tensor(t: pb.Tensor, where: str) -> TensorAttr:
    filled = [c for c in ("int32", "uint32", "float") if len(getattr(t, f"{c}_data"))]
    if len(filled) > 1:
        raise CVMLogicError(f"{where}: values in several containers ({', '.join(filled)})")
    container = filled[0] if filled else "int32"
    dtype = {"int32": np.int64, "uint32": np.int64, "float": np.float32}[container]
    values = np.array(getattr(t, f"{container}_data"), dtype=dtype)
    dims = list(t.dims)
    if dims:
        if any(d < 0 for d in dims) or int(np.prod(dims)) != values.size:
            raise CVMLogicError(f"{where}: 'dims' {dims} do not match the {values.size} values")
        values = values.reshape(dims)
    precision = Precision(pb.Precision.Name(t.precision)) if t.HasField("precision") else None
    name = t.name if t.HasField("name") else None
    return TensorAttr.from_numpy(values, precision, container=container, has_dims=bool(dims), name=name)


def _param(a: pb.Attribute, where: str) -> ParamAttr:
    kind = _enum_name(pb.AttributeType, _required(a, "type", where), "type", where)
    float_value = a.float_value if a.HasField("float_value") else None
    if float_value is not None and not np.isfinite(float_value):
        raise CVMLogicError(f"{where}: attribute {kind} has a non-finite 'float_value'")
    return ParamAttr.get(
        ParamKind(kind),
        a.int_value if a.HasField("int_value") else None,
        Precision(pb.Precision.Name(a.precision)) if a.HasField("precision") else None,
        float_value,
    )


def _cluster(c: pb.EdgeCluster, where: str) -> ClusterAttr:
    interfaces = []
    for k, i in enumerate(c.interfaces):
        edge = _required(i, "edge_id", f"{where}, interface {k}")
        interfaces.append(InterfaceAttr.get(edge, _opt_shape(i, "position"), _opt_shape(i, "size")))
    return ClusterAttr.get(interfaces, _opt_shape(c, "shape"))


def _block(b: pb.TaskBlock, index: int) -> BlockOp:
    where = f"block #{index}"
    block_id = _required(b, "id", where)
    where = f"block {block_id}"
    kind = _enum_name(pb.TaskBlockType, _required(b, "type", where), "type", where)
    op_class = BLOCK_OP_OF_KIND.get(kind)
    if op_class is None:
        raise CVMLogicError(f"{where}: block type {kind} is not supported")
    precision = Precision(pb.Precision.Name(_required(b, "precision", where)))
    if not b.HasField("shape"):
        raise CVMLogicError(f"{where}: missing 'shape'")
    return op_class(
        block_id,
        precision,
        _shape(b.shape),
        [_cluster(c, f"{where}, input cluster {k}") for k, c in enumerate(b.input_clusters)],
        [_cluster(c, f"{where}, output cluster {k}") for k, c in enumerate(b.output_clusters)],
        [_param(a, where) for a in b.attributes],
        _tensor(b.data, f"{where}, 'data'") if b.HasField("data") else None,
        BiasType(pb.BiasType.Name(b.bias_type)) if b.HasField("bias_type") else None,
        is_virtual=b.is_virtual if b.HasField("is_virtual") else None,
        major_task_id=b.major_task_id if b.HasField("major_task_id") else None,
        pipeline_num=b.pipeline_num if b.HasField("pipeline_num") else None,
        socket_id=b.socket_id if b.HasField("socket_id") else None,
    )


def _edge(e: pb.Edge, index: int) -> EdgeOp:
    where = f"edge #{index}"
    edge_id = _required(e, "id", where)
    where = f"edge {edge_id}"
    rearranges = []
    for k, r in enumerate(e.rearrange_info):
        kind = _enum_name(pb.RearrangeInfoType, _required(r, "type", f"{where}, rearrange {k}"), "type", where)
        matrices = [_tensor(m, f"{where}, rearrange {k}, matrix {j}") for j, m in enumerate(r.matrix)]
        rearranges.append(RearrangeAttr(RearrangeKindAttr(RearrangeKind(kind)), ArrayAttr(matrices)))
    return EdgeOp(edge_id, _required(e, "src_block_id", where), _required(e, "dst_block_id", where), rearranges)


def graph_from_message(message: pb.TaskGraph) -> GraphOp:
    """The `taskgraph.graph` of a message (not verified)."""
    ops: list[BlockOp | EdgeOp | GroupOp] = [_block(b, k) for k, b in enumerate(message.blocks)]
    ops += [_edge(e, k) for k, e in enumerate(message.edges)]
    for k, g in enumerate(message.groups):
        ops.append(GroupOp(_required(g, "group_id", f"group #{k}"), list(g.block_ids)))
    test_config = message.test_config.SerializeToString().hex() if message.HasField("test_config") else None
    return GraphOp(ops, test_config)


def verify_graph(module: ModuleOp) -> None:
    """Verify a module holding a task graph; a CVMLogicError names what is wrong."""
    try:
        module.verify()
    except VerifyException as e:
        raise CVMLogicError(f"invalid task graph: {e}") from None


def import_task(path: str | os.PathLike[str]) -> ModuleOp:
    """Read a `.task` / `.task.txt` file into a verified module holding one `taskgraph.graph`."""
    message = load_message(path)
    if not message.blocks:
        raise CVMLogicError(f"task file {os.fspath(path)!r} holds no blocks (an empty graph)")
    try:
        module = ModuleOp([graph_from_message(message)])
    except VerifyException as e:  # an attribute that does not verify
        raise CVMLogicError(f"invalid task graph: {e}") from None
    verify_graph(module)
    return module


# ---------------------------------------------------------------------------------------------------------
# IR -> message
# ---------------------------------------------------------------------------------------------------------


def _fill_shape(target: pb.Shape, shape: ShapeAttr) -> None:
    target.SetInParent()
    ir_to_file = {ir: f for f, ir in _SHAPE_FIELDS.items()}
    for d, v in shape.given().items():
        setattr(target, ir_to_file[d], v)
    target.extra_dimensions.extend(e.data for e in shape.extra.data)


def _fill_tensor(target: pb.Tensor, tensor: TensorAttr) -> None:
    target.SetInParent()
    values = tensor.to_numpy()
    if tensor.has_dims.data:
        target.dims.extend(values.shape)
    if (precision := tensor.get_precision()) is not None:
        target.precision = _number(pb.Precision, precision.value)
    getattr(target, f"{tensor.container}_data").extend(values.ravel().tolist())
    if isinstance(tensor.tensor_name, StringAttr):
        target.name = tensor.tensor_name.data


def _fill_block(target: pb.TaskBlock, block: BlockOp) -> None:
    target.id = block.id
    target.type = _number(pb.TaskBlockType, block.kind)
    target.precision = _number(pb.Precision, block.get_precision().value)
    _fill_shape(target.shape, block.shape)
    for clusters, field in ((block.inputs, target.input_clusters), (block.outputs, target.output_clusters)):
        for cluster in clusters.data:
            c = field.add()
            if isinstance(cluster.shape, ShapeAttr):
                _fill_shape(c.shape, cluster.shape)
            for iface in cluster.interfaces.data:
                i = c.interfaces.add()
                if isinstance(iface.position, ShapeAttr):
                    _fill_shape(i.position, iface.position)
                if isinstance(iface.size, ShapeAttr):
                    _fill_shape(i.size, iface.size)
                i.edge_id = iface.edge.data
    if block.data is not None:
        _fill_tensor(target.data, block.data)
    for p in block.params.data:
        a = target.attributes.add()
        a.type = _number(pb.AttributeType, p.kind.data.value)
        if isinstance(p.precision, PrecisionAttr):
            a.precision = _number(pb.Precision, p.precision.data.value)
        if isinstance(p.int_value, IntAttr):
            a.int_value = p.int_value.data
        if isinstance(p.float_value, FloatAttr):
            a.float_value = p.float_value.value.data
    if block.is_virtual is not None:
        target.is_virtual = bool(block.is_virtual.data)
    for key in ("major_task_id", "pipeline_num", "socket_id"):
        if (value := getattr(block, key)) is not None:
            setattr(target, key, value.data)
    if block.bias_type is not None:
        target.bias_type = _number(pb.BiasType, block.bias_type.data.value)


def message_from_graph(graph: GraphOp) -> pb.TaskGraph:
    """The protobuf message of a `taskgraph.graph`."""
    message = pb.TaskGraph()
    for block in graph.blocks:
        _fill_block(message.blocks.add(), block)
    for edge in graph.edges:
        e = message.edges.add()
        e.id, e.src_block_id, e.dst_block_id = edge.id, edge.src, edge.dst
        for r in edge.rearranges.data:
            info = e.rearrange_info.add()
            info.type = _number(pb.RearrangeInfoType, r.rearrange_kind.value)
            for m in r.matrix.data:
                _fill_tensor(info.matrix.add(), m)
    for group in graph.groups:
        g = message.groups.add()
        g.group_id = group.group_id.data
        g.block_ids.extend(group.block_ids())
    if graph.test_config is not None:
        message.test_config.SetInParent()
        message.test_config.MergeFromString(bytes.fromhex(graph.test_config.data))
    return message


def find_graph(module: ModuleOp) -> GraphOp:
    """The one `taskgraph.graph` of a module."""
    graphs = [op for op in module.walk() if isinstance(op, GraphOp)]
    if len(graphs) != 1:
        raise CVMLogicError(f"expected one taskgraph.graph in the module, got {len(graphs)}")
    return graphs[0]


def export_task(module: ModuleOp, path: str | os.PathLike[str]) -> None:
    """Write the module's `taskgraph.graph` as a `.task` (binary) or `.task.txt` (text) file."""
    save_message(message_from_graph(find_graph(module)), path)
