"""Mutations of corpus models for the consensus corpus: the shared fuzzers' mutations plus targeted ones.

`mutate(case, seed)` turns a valid corpus case into (model.json bytes, params.bin bytes, kind), the same bytes for
the same seed on every machine (random.Random with an integer seed). The targeted mutations aim at the decisions of
cvm-runtime's load path (runtime/frontend/graph.py lists them): JSON text the runtime's reader treats its own way,
unknown and duplicate keys, both file versions, storage plans, params files, heads, postprocess, aliases, precisions.
"""

from __future__ import annotations

import json
import pathlib
import random
import struct
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "corpus_tools"))
from consensus_fuzz import semantic_mutation
from fuzz_model_files import mutate_json, mutate_params

ARRAY_MAGIC = struct.pack("<Q", 0xDD5E40F096B4A13F)


def _text(doc: dict) -> bytes:
    return json.dumps(doc).encode()


def _ops(doc: dict) -> list[int]:
    return [i for i, n in enumerate(doc["nodes"]) if n.get("op") == "cvm_op"]


def _json_text(doc: dict, pb: bytes, rng: random.Random) -> tuple[bytes, bytes]:
    """Text the runtime's reader reads its own way."""
    t = json.dumps(doc)
    k = rng.randrange(9)
    if k == 0:  # cut anywhere
        return t[: rng.randrange(len(t))].encode(), pb
    if k == 1:  # garbage after the top-level object
        return (t + rng.choice([" xyz", "}", ",", "\n{}"])).encode(), pb
    if k == 2:  # an escape the runtime does not know, or a raw newline inside a string
        name = doc["nodes"][-1]["name"]
        odd = rng.choice(['"a\\u0041"', '"a\\/b"', '"a\\nb"', '"a\nb"', '"x\\tz"'])
        return t.replace(f'"{name}"', odd, 1).encode(), pb
    if k == 3:  # numbers written otherwise
        return t.replace("[0, 0, 0]", rng.choice(["[0.0, 0, 0]", "[+0, 0, 0]", "[00, 0, 0]", "[0 , 0 ,0]",
                                                  "[-0, 0, 0]", "[0, 0]", "[0, 0, 0, 0]", "[0]", "[]"]), 1).encode(), pb
    if k == 4:  # a key twice: the runtime reads both, in order
        key = rng.choice(['"heads"', '"nodes"', '"version"', '"attrs"'])
        i = t.find(key)
        if i > 0:
            return (t[:1] + t[i:].split(', "', 1)[0] + ", " + t[1:]).encode(), pb
        return t.encode(), pb
    if k == 5:  # whitespace the runtime skips
        return t.replace(": ", rng.choice([":\t", " :\n", ":\r\n "])).encode(), pb
    if k == 6:  # a non-ASCII name, written raw
        d = json.loads(t)
        d["nodes"][-1]["name"] = "ñodo_1"
        return json.dumps(d, ensure_ascii=False).encode(), pb
    if k == 7:  # a string where a number belongs, or the reverse
        return t.replace('"storage_id": ["list_int", [0', '"storage_id": ["list_int", ["0"', 1).encode(), pb
    return t.replace('"list_shape"', rng.choice(['"list_int"', '"list_str"', '"list_shape "']), 1).encode(), pb


def _keys(doc: dict, rng: random.Random) -> dict:
    """Unknown, missing and odd keys at every level."""
    d = json.loads(json.dumps(doc))
    k = rng.randrange(10)
    if k == 0:
        d[rng.choice(["extra", "metadata", "Nodes"])] = rng.choice([1, "x", []])
    elif k == 1:
        rng.choice(d["nodes"])[rng.choice(["extra", "precision", "attr"])] = rng.choice([1, 7, "x"])
    elif k == 2 and _ops(d):
        d["nodes"][rng.choice(_ops(d))]["attrs"][rng.choice(["extra", "op_attrs", "num_inputs"])] = "9"
    elif k == 3:
        d["attrs"][rng.choice(["extra", "dtype", "device_index"])] = rng.choice(
            [["list_int", []], ["list_int", [1]], ["list_str", 3], ["list_str", ["a"]], ["list_shape", []]])
    elif k == 4:
        d.pop(rng.choice(["arg_nodes", "node_row_ptr", "version", "heads", "attrs", "nodes"]), None)
    elif k == 5:
        d["attrs"].pop(rng.choice(["dltype", "storage_id", "shape", "precision", "op_attrs"]), None)
    elif k == 6:
        n = rng.choice(d["nodes"])
        n.pop(rng.choice(["op", "name", "inputs", "attrs"]), None)
    elif k == 7:  # attrs on a variable, inputs on a variable
        v = d["nodes"][0]
        if rng.random() < 0.5:
            v["attrs"] = rng.choice([{}, {"func_name": "relu"}])
        else:
            v["inputs"] = [[0, 0, 0]]
    elif k == 8:
        d["postprocess"] = rng.choice(["argmax", "detection", "bogus", "", "x" * 31, "x" * 40])
    else:
        d["attrs"]["op_attrs"][1][rng.randrange(len(d["nodes"]))] = rng.choice(["", "{}", "[]", "{\"a\": 1}", " "])
    return d


def _versions(doc: dict, rng: random.Random) -> dict:
    """The two file versions and what each checks: dltype, node_row_ptr, arg_nodes."""
    d = json.loads(json.dumps(doc))
    k = rng.randrange(6)
    other = "cvm_1.1.0" if d.get("version", "cvm_1.0.0") == "cvm_1.0.0" else "cvm_1.0.0"
    if k == 0:
        d["version"] = other
    elif k == 1:
        d["version"] = "cvm_1.1.0"
        d.pop("node_row_ptr", None)
        d.pop("arg_nodes", None)
    elif k == 2:
        d["version"] = rng.choice(["cvm_1.0.0", "cvm_1.1.0"])
        dl = d["attrs"].setdefault("dltype", ["list_str", []])[1]
        if dl:
            dl[rng.randrange(len(dl))] = rng.choice(["int8", "int16", "float32", ""])
        else:
            dl.append("int32")
    elif k == 3:
        rows = d.get("node_row_ptr", [])
        if rows:
            rows[rng.randrange(len(rows))] += rng.choice([-1, 1])
        if rng.random() < 0.5:
            d["version"] = "cvm_1.1.0"
    elif k == 4:
        args = d.get("arg_nodes", [])
        d["arg_nodes"] = rng.choice([args[:-1], args + args[:1], [len(d["nodes"]) - 1], []])
        if rng.random() < 0.5:
            d["version"] = "cvm_1.1.0"
    else:
        d["attrs"]["dltype"] = ["list_str", ["int32"]]
        d["version"] = "cvm_1.1.0"
    return d


def _storage(doc: dict, rng: random.Random) -> dict:
    """Storage plans: in place, shared, negative, large."""
    d = json.loads(json.dumps(doc))
    sid = d["attrs"]["storage_id"][1]
    rows = d.get("node_row_ptr") or list(range(len(sid) + 1))
    k = rng.randrange(5)
    ops = _ops(d)
    if k == 0 and ops:  # an operator's output in its first input's buffer
        i = rng.choice(ops)
        src = d["nodes"][i]["inputs"][0]
        if src[0] < len(rows) - 1 and rows[i] < len(sid):
            sid[rows[i]] = sid[rows[src[0]] + src[1]] if rows[src[0]] + src[1] < len(sid) else sid[rows[i]]
    elif k == 1 and len(sid) > 1:  # two random entries in one buffer
        a, b = rng.sample(range(len(sid)), 2)
        sid[a] = sid[b]
    elif k == 2:
        sid[rng.randrange(len(sid))] = rng.choice([-1, len(sid), 1000, 1 << 24, (1 << 31) - 1])
    elif k == 3:
        d["attrs"]["storage_id"][1] = list(range(len(sid)))[::-1]
    else:
        d["attrs"]["storage_id"][1] = [0] * len(sid)
    return d


def _graph(doc: dict, rng: random.Random) -> dict:
    """Heads, edges, precisions, operator names."""
    d = json.loads(json.dumps(doc))
    n = len(d["nodes"])
    k = rng.randrange(8)
    if k == 0:
        d["heads"] = rng.choice([[], [[n - 1, 1, 0]], [[n, 0, 0]], [[n - 1, 0, 0], [n - 1, 0, 0]],
                                 [[0, 0, 0]], [[n - 1, 0, 0], [0, 0, 0]], [[n - 2, 1, 0]], [[n + 3, 0, 0]]])
    elif k == 1 and _ops(d):
        e = rng.choice(d["nodes"][rng.choice(_ops(d))]["inputs"] or [[0, 0, 0]])
        e[1] = rng.choice([1, 2, -1, 5])  # an index past the node's outputs names a later entry
    elif k == 2:
        p = d["attrs"]["precision"][1]
        p[rng.randrange(len(p))] = rng.choice([-1, 0, 1, 8, 9, 31, 32, 33, -2])
    elif k == 3 and _ops(d):
        node = d["nodes"][rng.choice(_ops(d))]
        f = node["attrs"]["func_name"]
        node["attrs"]["func_name"] = rng.choice([f + "_12", f + "_", "nn." + f, "nn.relu", "add", "multiply",
                                                 "vision.non_max_suppression", "cvm_op", "__add_symbol__", f + "x"])
    elif k == 4 and _ops(d):
        node = d["nodes"][rng.choice(_ops(d))]
        node["inputs"] = node["inputs"] + [[0, 0, 0]] if rng.random() < 0.5 else node["inputs"][:-1]
    elif k == 5:
        d["nodes"][0]["name"] = rng.choice(["data", "w", "data2", d["nodes"][-1]["name"]])
    elif k == 6:  # two variables of one name
        names = [x["name"] for x in d["nodes"] if x["op"] == "null"]
        if len(names) > 1:
            d["nodes"][[i for i, x in enumerate(d["nodes"]) if x["op"] == "null"][1]]["name"] = names[0]
    else:
        shp = d["attrs"]["shape"][1]
        j = rng.randrange(len(shp))
        shp[j] = rng.choice([[1 << 24], [(1 << 24) + 1], [1 << 15, 1 << 15], [1 << 15, (1 << 15) + 1], [1] * 6,
                             [1] * 7, [0], [], [-1]])
    return d


def _params(pb: bytes, doc: dict, rng: random.Random) -> bytes:
    """Params files: entries the graph lacks, dtypes, devices, dims, cuts at every field."""
    b = bytearray(pb)
    k = rng.randrange(8)
    at = pb.find(ARRAY_MAGIC)
    if k == 0 or at < 0:  # one more entry, named after a node or not
        name = rng.choice(["extra", "data", doc["nodes"][-1]["name"]]).encode()
        n = struct.unpack_from("<Q", b, 16)[0]
        names_end = 24
        for _ in range(n):
            names_end += 8 + struct.unpack_from("<Q", b, names_end)[0]
        arr = struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 1, 0, 32, 1) + struct.pack("<qq", 1, 4) + \
            struct.pack("<i", 1)
        out = b[:16] + struct.pack("<Q", n + 1) + b[24:names_end] + struct.pack("<Q", len(name)) + name + \
            struct.pack("<Q", n + 1) + b[names_end + 8:] + arr
        return bytes(out)
    head = at + 16  # device_type, device_id, ndim, code, bits, lanes
    if k == 1:
        struct.pack_into("<i", b, head, rng.choice([0, 2, 3, 4, 5, -1, 40, 200]))
    elif k == 2:
        struct.pack_into("<i", b, head + 8, rng.choice([-1, 0, 7, 1 << 30]))
    elif k == 3:
        b[head + 12] = rng.choice([1, 2, 3])
    elif k == 4:
        b[head + 13] = rng.choice([0, 1, 7, 16, 64])
    elif k == 5:
        struct.pack_into("<H", b, head + 14, rng.choice([0, 2, 100]))
    elif k == 6:  # cut inside a field of the first array or of the list header
        return bytes(b[: rng.choice([4, 12, 20, 28, at + 4, at + 12, head + 2, head + 10, head + 18, head + 26,
                                     head + 34])])
    else:  # an int16 array whose byte count agrees with its dtype
        ndim = struct.unpack_from("<i", b, head + 8)[0]
        if 0 <= ndim <= 6:
            size_at = head + 16 + 8 * ndim
            nbytes = struct.unpack_from("<q", b, size_at)[0]
            b[head + 13] = 16
            elems = nbytes if b[head + 13] == 16 and nbytes < 1 << 20 else 0
            struct.pack_into("<q", b, size_at, 2 * elems)
            b[size_at + 8: size_at + 8] = bytes(elems)
    return bytes(b)


# Seeds from here on mutate the geometry of a conv2d (generate.py picks a case with one for them).
CONV_SEEDS = 100_000


def has_conv(case: pathlib.Path) -> bool:
    return '"func_name":"conv2d"' in (case / "model.json").read_text().replace(" ", "")


def _pair(text: str) -> tuple[int, int]:
    a, b = (int(v) for v in text.strip("()[] ").split(","))
    return a, b


def _conv_geometry(doc: dict, rng: random.Random) -> dict:
    """A conv2d whose attributes no longer describe its weight: other groups (the weight keeps its channels), or a
    kernel size with a padding that keeps the output's shape. The runtime convolves with the weight's geometry
    anyway: a defined result when the weight has enough channels and gives the output's shape, else a read or
    write past a tensor (rules.conv2d_weight_geometry)."""
    d = json.loads(json.dumps(doc))
    shapes, op_attrs = d["attrs"]["shape"][1], d["attrs"]["op_attrs"][1]
    rows = d.get("node_row_ptr") or list(range(len(shapes) + 1))
    i = rng.choice([i for i in _ops(d) if d["nodes"][i]["attrs"]["func_name"] == "conv2d"])
    a = json.loads(op_attrs[i])
    src, k = d["nodes"][i]["inputs"][0][:2]
    ic, ch, groups = shapes[rows[src] + k][1], int(a["channels"]), int(a.get("groups", "1"))
    kinds = [g for g in range(1, min(ic, ch) + 1) if ic % g == 0 and ch % g == 0 and g != groups]
    if kinds and rng.random() < 0.6:
        a["groups"] = str(rng.choice(kinds))
    else:
        (kh, kw), (ph, pw) = _pair(a["kernel_size"]), _pair(a.get("padding", "(0, 0)"))
        dh, dw = rng.choice([(1, 1), (-1, -1), (1, 0), (0, -1)])
        if kh + 2 * dh >= 1 and ph + dh >= 0 and kw + 2 * dw >= 1 and pw + dw >= 0:
            a["kernel_size"], a["padding"] = f"({kh + 2 * dh}, {kw + 2 * dw})", f"({ph + dh}, {pw + dw})"
    op_attrs[i] = json.dumps(a)
    return d


def mutate(case: pathlib.Path, seed: int) -> tuple[bytes, bytes, str]:
    """A mutated copy of a valid corpus case: (model.json, params.bin, kind)."""
    rng = random.Random(seed)
    doc = json.loads((case / "model.json").read_text())
    p = case / "params.bin"
    pb = p.read_bytes() if p.exists() else b""
    if seed >= CONV_SEEDS:
        return _text(_conv_geometry(doc, rng)), pb, "conv_geometry"
    r = rng.random()
    if r < 0.30:
        d, pb2, kind = semantic_mutation(doc, pb, rng)
        return _text(d), pb2, "shared_" + kind
    if r < 0.42:
        return _text(mutate_json(doc, rng)), pb, "shared_structural_json"
    if r < 0.50:
        return _text(doc), mutate_params(pb, rng), "shared_structural_params"
    if r < 0.58:
        js, pb2 = _json_text(doc, pb, rng)
        return js, pb2, "json_text"
    if r < 0.68:
        return _text(_keys(doc, rng)), pb, "keys"
    if r < 0.76:
        return _text(_versions(doc, rng)), pb, "versions"
    if r < 0.84:
        return _text(_storage(doc, rng)), pb, "storage"
    if r < 0.93:
        return _text(_graph(doc, rng)), pb, "graph"
    return _text(doc), _params(pb, doc, rng), "params"
