"""Writing a `Graph` back as cvm-runtime's two files: the graph JSON (`graph_to_json`) and the params binary
(`params.write_params`); `save_graph` writes both into a folder.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMRuntimeError
from cvmc.runtime.frontend.files import write_file
from cvmc.runtime.frontend.params import write_params

if TYPE_CHECKING:
    from cvmc.runtime.frontend.graph import Graph


def graph_to_json(g: Graph) -> dict[str, Any]:
    """The graph JSON document of a Graph (with a fresh one-buffer-per-entry storage plan)."""
    nodes, row_ptr, shapes, precs, op_attrs = [], [0], [], [], []
    for n in g.nodes:
        entry: dict[str, Any] = {"op": "null" if n.is_variable else "cvm_op", "name": n.name,
                                 "inputs": [[s, k, 0] for s, k in n.inputs]}
        if not n.is_variable:
            entry["attrs"] = {"func_name": n.op, "num_inputs": str(len(n.inputs)),
                              "num_outputs": str(len(n.shapes)), "flatten_data": "0"}
            specs = {s.name: s for s in rules.OP_ATTRS[n.op]}
            text = json.dumps({k: rules.format_attr(specs[k], v) for k, v in n.attrs.items()}, ensure_ascii=False)
        else:
            text = "{}"
        nodes.append(entry)
        op_attrs.append(text)
        for shape, p in zip(n.shapes, n.precisions, strict=True):
            shapes.append(list(shape))
            precs.append(p)
        row_ptr.append(len(shapes))
    doc: dict[str, Any] = {
        "nodes": nodes,
        "arg_nodes": [i for i, n in enumerate(g.nodes) if n.is_variable],
        "node_row_ptr": row_ptr,
        "heads": [[n, k, 0] for n, k in g.heads],
        "attrs": {
            "dltype": ["list_str", ["int32"] * len(shapes)],
            "storage_id": ["list_int", list(range(len(shapes)))],
            "shape": ["list_shape", shapes],
            "precision": ["list_int", precs],
            "op_attrs": ["list_str", op_attrs],
        },
        "version": g.version,
    }
    if g.postprocess:
        doc["postprocess"] = g.postprocess
    return doc


def save_graph(graph: Graph, directory: str | os.PathLike[str]) -> None:
    """Write cvm-runtime's `model.json` and `params.bin` for a graph into a directory, created if needed, through
    cvmc's one writer (`files.write_file`: never through a link planted there, nor over a FIFO or a device)."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise CVMRuntimeError(f"cannot create the model folder {os.fspath(directory)!r}: {e.strerror or e}") from None
    write_file(os.path.join(directory, "model.json"), json.dumps(graph_to_json(graph), ensure_ascii=False),
               "the model's graph")
    write_file(os.path.join(directory, "params.bin"), write_params(graph.params), "the model's params")
