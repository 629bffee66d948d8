"""cvmc against the int8 engines users deploy, on ONNX twins of a CVM model, interleaved in one run.

    python bench/int8_peers.py [--model bench/resnet/model.json] [--rounds 20] [--threads 1,2] [--variant SEED]
                               [--time-model PATH]

`--variant SEED` runs everything on a model of the same architecture that nobody tuned for: random params within
their declared precisions, and each cvm_right_shift's shift moved by -1, 0 or +1.

The twin has the CVM model's conv2d and dense layers with the same shapes (the CVM weights as float, each
conv's bias and weight scaled by the 2^-shift of the cvm_right_shift that requantizes it), Relu, Add for the
residual adds, GlobalAveragePool for the sum and Gemm for the dense; a cvm_right_shift is a rescale, which the
int8 engines fold into their requantization. It is quantized the way users do it: onnxruntime's static
quantizer, QDQ, u8 activations x s8 weights, per-tensor, calibrated (MinMax) on random inputs of the model's
precision. Timed, interleaved round by round (the order rotates), each system making `--block` calls back to
back per round, as a deployed engine serves calls, after `--cooldown` seconds idle: an engine's idle workers spin
after its call, and would take the cores from the next engine's calls (ONNX Runtime's, by default, burn the
second core for about 60 ms after each call; any other engine's 2-thread calls in that window run at about half
speed). At each thread count:
- cvmc (`device="cpu"`, `CVMC_THREADS`), on the CVM model itself;
- ONNX Runtime int8 (the QDQ model) and float32 (the twin); its optimized int8 model is saved and must hold
  QLinearConv (fused QDQ) for every conv layer, else the run fails;
- OpenVINO int8 (the QDQ model; optional: skipped when `openvino` is not installed);
- cvm-runtime's CPU backend where `--time-model` (default `$CVMC_ORACLE_TIME_MODEL`, else
  /work/oracle/time_model) exists (its own medians, in the same run but not interleaved: it is another process).
It prints cvmc's target (`runtime.driver.target.detect_target`), medians, GMAC/s, each peer's time over cvmc's, and % of
the measured int8 limit (a microkernel of 16 independent multiply-add chains, JIT-compiled with llvmlite, on 1 and
2 threads, best of 60 runs, for every tier the host has: `vpdpbusd` with AVX512-VNNI, AVX2's `vpmaddubsw` widened
by `vpmaddwd`, exact as cvmc's AVX2 u8 x s8 kernel uses it), then per conv layer the kernel cvmc's plan gives it
(its tier) and cvmc's time alone (the layer with its requantization as a one-layer CVM model, its input's relu and
pack included) and the time of its convolution kernel alone (what runs in the model, where the layer before
writes the packed input), each with its % of the 1-thread limit, and the kernel's best run (a peak, as the limit
is: load only ever slows a run down) with its %. Before the timings, cvmc's cold compile of the
model (an empty cache): the first in the process, which imports xDSL, then 5 with the compiler loaded, one
compile thread and `$CVMC_COMPILE_THREADS` (default: the CPUs, at most 8) interleaved.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

import numpy as np

import cvmc
from cvmc.runtime.engine.jit import compile_threads, host_target
from cvmc.runtime.frontend.graph import load_graph, write_params

HERE = pathlib.Path(__file__).parent
TIME_MODEL = os.environ.get("CVMC_ORACLE_TIME_MODEL", "/work/oracle/time_model")


# ---- the vpdpbusd limit ----------------------------------------------------------------------------------

_CHAINS = 16
# What one step of a chain is, per host: (name, LLVM IR of `%n = f(%a, %x, %y)` with {a}, {n} for the chain,
# declarations, vector types of the operands and the accumulator, MACs per step)
_AVX512 = {
    "vpdpbusd": ("  {n} = call <16 x i32> @llvm.x86.avx512.vpdpbusd.512(<16 x i32> {a}, <64 x i8> %x, <64 x i8> %y)",
                 "declare <16 x i32> @llvm.x86.avx512.vpdpbusd.512(<16 x i32>, <64 x i8>, <64 x i8>)",
                 "<64 x i8>", "<16 x i32>", 64),
    "vpdpwssd": ("  {n} = call <16 x i32> @llvm.x86.avx512.vpdpwssd.512(<16 x i32> {a}, <32 x i16> %x, <32 x i16> %y)",
                 "declare <16 x i32> @llvm.x86.avx512.vpdpwssd.512(<16 x i32>, <32 x i16>, <32 x i16>)",
                 "<32 x i16>", "<16 x i32>", 32),
}
_AVX2 = {  # no VNNI: u8 x s8 as cvmc's micro-kernel does it (vpmaddubsw, widened by vpmaddwd), and int16; each
    # chain's multiplicand is its accumulator (else LLVM hoists the loop-invariant products out of the loop)
    "vpmaddubsw": ("  {n}x = bitcast <8 x i32> {a} to <32 x i8>\n"
                   "  {n}h = call <16 x i16> @llvm.x86.avx2.pmadd.ub.sw(<32 x i8> {n}x, <32 x i8> %y)\n"
                   "  {n}w = call <8 x i32> @llvm.x86.avx2.pmadd.wd(<16 x i16> {n}h, <16 x i16> "
                   "<i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, i16 1, "
                   "i16 1, i16 1, i16 1>)\n  {n} = add <8 x i32> {a}, {n}w",
                   "declare <16 x i16> @llvm.x86.avx2.pmadd.ub.sw(<32 x i8>, <32 x i8>)\n"
                   "declare <8 x i32> @llvm.x86.avx2.pmadd.wd(<16 x i16>, <16 x i16>)",
                   "<32 x i8>", "<8 x i32>", 32),
    "vpmaddwd": ("  {n}x = bitcast <8 x i32> {a} to <16 x i16>\n"
                 "  {n}w = call <8 x i32> @llvm.x86.avx2.pmadd.wd(<16 x i16> {n}x, <16 x i16> %y)\n"
                 "  {n} = add <8 x i32> {a}, {n}w",
                 "declare <8 x i32> @llvm.x86.avx2.pmadd.wd(<16 x i16>, <16 x i16>)", "<16 x i16>", "<8 x i32>", 16),
}


def fma_kind() -> dict[str, tuple[str, str, str, str, int]]:
    """The float limit the cinn path's Dot and convs are measured against (bench/cinn_dot_blocks.py): a fused
    multiply-add of f32 vectors a step (2 flops a lane), 16 lanes with AVX-512, else AVX2's 8 (12 chains)."""
    from cvmc.runtime.driver.target import host_vector_bytes

    lanes = host_vector_bytes() // 4
    v, name = f"<{lanes} x float>", f"v{lanes}f32"
    return {"vfmadd231ps": (f"  {{n}} = call {v} @llvm.fma.{name}({v} %x, {v} %y, {v} {{a}})",
                            f"declare {v} @llvm.fma.{name}({v}, {v}, {v})", v, v, lanes)}


def limit_kinds() -> dict[str, tuple[str, str, str, str, int]]:
    """The chains of every tier this host runs: AVX512-VNNI's (`vpdpbusd` first), then AVX2's (`vpmaddubsw`)."""
    from cvmc.runtime.driver.target import host_has

    return {**(_AVX512 if host_has("avx512-vnni") else {}), **(_AVX2 if host_has("avx2") else {})}


def _peak_ir(step: str, declare: str, pair: str, acc: str, chains: int) -> str:
    accs = "\n".join(f"  %a{k} = phi {acc} [zeroinitializer, %entry], [%n{k}, %loop]" for k in range(chains))
    steps = "\n".join(step.format(a=f"%a{k}", n=f"%n{k}") for k in range(chains))
    add = "fadd" if "float" in acc else "add"
    total = "\n".join(f"  %s{k} = {add} {acc} %s{k - 1}, %n{k}" for k in range(1, chains))
    return f"""
{declare}
define void @peak(ptr %io, i64 %n) {{
entry:
  %x = load {pair}, ptr %io, align 1
  %py = getelementptr i8, ptr %io, i64 64
  %y = load {pair}, ptr %py, align 1
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
{accs}
{steps}
  %i1 = add i64 %i, 1
  %c = icmp ult i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  %s0 = {add} {acc} zeroinitializer, %n0
{total}
  store {acc} %s{chains - 1}, ptr %io, align 1
  ret void
}}
"""


def vnni_limit(threads: int, seconds: float = 0.004, repeat: int = 60, kinds: dict | None = None) -> dict[str, float]:
    """Measured GMAC/s of this host's int8 and int16 multiply-add chains (`limit_kinds`: `vpdpbusd` and
    `vpdpwssd` with AVX512-VNNI, else AVX2's `vpmaddubsw` + `vpmaddwd` and `vpmaddwd`; or of the chains `kinds`,
    such as `fma_kind()`) on `threads` threads at once (each its own chains), the best of `repeat` runs of about
    `seconds` each (short runs, many: on a shared machine some run alone on its core)."""
    import llvmlite.binding as llvm

    triple, cpu, features = host_target()
    out: dict[str, float] = {}
    for name, (step, declare, pair, acc, per_step) in (kinds or limit_kinds()).items():
        chains = _CHAINS if acc.startswith("<16") else 12  # AVX2 has 16 vector registers: 12 chains, no spill
        mod = llvm.parse_assembly(_peak_ir(step, declare, pair, acc, chains))
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features, opt=3, jit=True)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(engine.get_function_address("peak"))
        bufs = [np.ones(32, np.float32) for _ in range(threads)]  # 1.0: a float chain stays normal, no assist
        n = 1 << 16
        while True:  # calibrate n to about `seconds` on one thread
            t = time.perf_counter()
            fn(bufs[0].ctypes.data, n)
            if time.perf_counter() - t > seconds / 4:
                break
            n *= 2
        n = int(n * seconds / max(time.perf_counter() - t, 1e-6)) or 1

        def one(k: int) -> None:
            fn(bufs[k].ctypes.data, n)

        rates = []
        for _ in range(repeat):
            workers = [threading.Thread(target=one, args=(k,)) for k in range(threads)]
            t = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            rates.append(threads * n * chains * per_step / (time.perf_counter() - t) / 1e9)
        out[name] = max(rates)  # a peak: load only ever slows a run down
        del engine
    return out


# ---- the ONNX twin -----------------------------------------------------------------------------------------


def _consumers(graph) -> dict[int, list[int]]:
    users: dict[int, list[int]] = {}
    for i, n in enumerate(graph.nodes):
        for src, _ in n.inputs:
            users.setdefault(src, []).append(i)
    return users


def onnx_twin(graph):
    """The float ONNX model with the CVM model's layers (see the module docstring)."""
    from onnx import TensorProto, helper, numpy_helper

    users = _consumers(graph)
    name: dict[int, str] = {}
    nodes, inits = [], []
    folded: set[int] = set()
    for i, n in enumerate(graph.nodes):
        if n.op == "null":
            if i == graph.input_id:
                name[i] = "data"
            continue
        ins = [name.get(s, "") for s, _ in n.inputs]
        out = f"t{i}"
        if n.op in ("conv2d", "dense"):
            shift = 0
            nxt = users.get(i, [])
            if len(nxt) == 1 and graph.nodes[nxt[0]].op == "cvm_right_shift":
                shift = graph.nodes[nxt[0]].attrs["shift_bit"]
                folded.add(nxt[0])
            scale = 2.0 ** -shift
            w = graph.params[graph.nodes[n.inputs[1][0]].name].astype(np.float32) * scale
            inits.append(numpy_helper.from_array(w, f"w{i}"))
            args = [ins[0], f"w{i}"]
            if len(n.inputs) > 2:
                b = graph.params[graph.nodes[n.inputs[2][0]].name].astype(np.float32) * scale
                inits.append(numpy_helper.from_array(b, f"b{i}"))
                args.append(f"b{i}")
            if n.op == "conv2d":
                a = n.attrs
                (ph, pw) = a["padding"]
                nodes.append(helper.make_node("Conv", args, [out], name=n.name, strides=list(a["strides"]),
                                              pads=[ph, pw, ph, pw], dilations=list(a["dilation"]),
                                              group=a["groups"], kernel_shape=list(a["kernel_size"])))
            else:
                nodes.append(helper.make_node("Gemm", args, [out], name=n.name, transB=1))
        elif n.op == "cvm_right_shift":
            name[i] = ins[0]  # a rescale: folded into the conv before it, else into the engines' requantization
            continue
        elif n.op == "relu":
            nodes.append(helper.make_node("Relu", ins, [out], name=n.name))
        elif n.op == "elemwise_add":
            nodes.append(helper.make_node("Add", ins, [out], name=n.name))
        elif n.op == "sum" and tuple(n.attrs["axis"]) == (2, 3) and not n.attrs["keepdims"]:
            nodes.append(helper.make_node("GlobalAveragePool", ins, [out + "p"], name=n.name))
            nodes.append(helper.make_node("Flatten", [out + "p"], [out], name=n.name + "_flat"))
        else:
            raise SystemExit(f"bench: no ONNX twin for {n.op} (node {n.name})")
        name[i] = out
    (head, _), = graph.heads
    shape = graph.nodes[graph.input_id].shapes[0]
    g = helper.make_graph(nodes, "twin", [helper.make_tensor_value_info("data", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info(name[head], TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def quantize(fp32: pathlib.Path, int8: pathlib.Path, shape, bound: int, samples: int = 16) -> None:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    rng = np.random.default_rng(1)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = samples

        def get_next(self):
            if not self.left:
                return None
            self.left -= 1
            return {"data": rng.integers(-bound, bound + 1, size=shape).astype(np.float32)}

    quantize_static(str(fp32), str(int8), Reader(), quant_format=QuantFormat.QDQ, per_channel=False,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)


def _ort(path: pathlib.Path, threads: int, optimized: pathlib.Path | None = None):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if optimized is not None:
        so.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _openvino(path: pathlib.Path, threads: int):
    try:
        import openvino as ov
    except ImportError:
        return None
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                                   "NUM_STREAMS": 1})
    request = compiled.create_infer_request()
    kinds = Counter()
    for op in compiled.get_runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        if rt["layerType"].astype(str) == "Convolution":
            kinds[f"{rt['runtimePrecision'].astype(str)} {rt['primitiveType'].astype(str)}"] += 1
    return request, dict(kinds)


def cold_compiles(model: pathlib.Path, params: pathlib.Path, rounds: int = 5) -> tuple[dict[str, list[float]], float]:
    """Seconds of `load_model` with an empty cache: the first in this process (which imports xDSL), then `rounds`
    each with one compile thread ("1") and with the default ("n"), interleaved. Leaves a fresh cache folder set."""
    def once(threads: str | None) -> float:
        os.environ["CVMC_CACHE_DIR"] = tempfile.mkdtemp(prefix="cvmc-cache-")
        before = os.environ.get("CVMC_COMPILE_THREADS")
        if threads is not None:
            os.environ["CVMC_COMPILE_THREADS"] = threads
        try:
            t = time.perf_counter()
            cvmc.load_model(str(model), str(params), device="cpu")
            return time.perf_counter() - t
        finally:
            if before is None:
                os.environ.pop("CVMC_COMPILE_THREADS", None)
            else:
                os.environ["CVMC_COMPILE_THREADS"] = before

    first = once(None)
    times: dict[str, list[float]] = {"1": [], "n": []}
    for _ in range(rounds):
        times["1"].append(once("1"))
        times["n"].append(once(None))
    once(None)
    return times, first


def _time_model(tool: pathlib.Path, model: pathlib.Path, params: pathlib.Path, inp: pathlib.Path, threads: int,
                runs: int):
    if not tool.exists():
        return None
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run([str(tool), "--device", "cpu", "-n", str(runs), str(model), str(params), str(inp)],
                         capture_output=True, text=True, env=env, timeout=600)
    if out.returncode:
        return None
    line = json.loads(out.stdout.strip().splitlines()[-1])
    return next(float(v) / 1e3 if "ms" in k else float(v) for k, v in line.items() if "median" in k)


def macs(graph) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in graph.nodes:
        if n.op == "conv2d":
            w = graph.nodes[n.inputs[1][0]].shapes[0]
            out[n.name] = int(np.prod(n.shapes[0])) * int(np.prod(w[1:]))
        elif n.op == "dense":
            out[n.name] = int(np.prod(n.shapes[0])) * graph.nodes[n.inputs[0][0]].shapes[0][1]
    return out


def conv_kernels(graph, target) -> dict[str, tuple[str, str]]:
    """Each conv2d layer's kernel as the scheduling passes chose it for `target` (the packs of its operands), by
    name: (what it is, the limit it runs against: the instruction of `limit_kinds` it is made of)."""
    from xdsl.context import Context

    from cvmc.dialects.cvm import CvmOperator
    from cvmc.dialects.cvm_sched import KernelOp, packing_of, ui8
    from cvmc.passes.loops.target import module_target
    from cvmc.passes.pipelines import PIPELINES, pipeline_passes
    from cvmc.runtime.frontend.cvm_ir import graph_to_module

    module = graph_to_module(graph)
    module_target(module, str(target))
    names = PIPELINES["cvm-to-loops"].split(",")
    for p in pipeline_passes("cvm-to-loops")[:names.index("cvm-bufferize")]:  # the scheduled level
        p.apply(Context(), module)
    main = module.body.block.first_op
    convs = []  # (data element, weight packing) of each conv2d kernel, in order
    for k in main.body.block.ops:
        anchor = k.body.block.first_op if isinstance(k, KernelOp) else None
        if isinstance(anchor, CvmOperator) and anchor.op_name == "conv2d":
            outside = dict(zip(k.body.block.args, k.inputs))
            x, w = (packing_of(outside[v]) for v in anchor.operands[:2])
            element = "i32" if x is None else "u8" if x.result.type.element_type == ui8 else \
                f"i{x.result.type.element_type.bitwidth}"
            convs.append((element, None if w is None else w.packing()))
    names = [n.name for n in graph.nodes if n.op == "conv2d"]
    out = {}
    for name, (element, pack) in zip(names, convs):
        blocked = pack is not None and pack["to"] == "conv_weight_blocked"
        if element == "u8" and blocked and target.has("amx"):
            out[name] = ("mmk_u8s8 amx (16 x 16 tiles)", "vpdpbusd")  # no tile limit measured: against vpdpbusd's
        elif element == "u8" and blocked and target.has("avx512-vnni"):
            assert pack is not None
            out[name] = (f"mmk_u8s8 avx512-vnni ({pack['lanes']} lanes)", "vpdpbusd")
        elif element == "u8" and blocked:
            out[name] = ("mmk_u8s8 avx2", "vpmaddubsw")
        elif element == "u8":
            out[name] = ("dot_u8s8 (im2col, vpdpbusd)", "vpdpbusd")
        else:
            out[name] = (("mmk_" if blocked else "im2col ") + element, "vpmaddwd")
    return out


def layer_times(graph, rounds: int) -> dict[str, tuple[float, float, float]]:
    """cvmc's median times (1 thread) of each conv2d layer alone with its requantization (and the relu of its
    input where the model's input to it is a relu's: a small kernel more than in the model, where the relu is
    fused into the layer before), and of its convolution kernel alone (no relu, no pack of its input: in the model
    the layer before writes that packed input), then that kernel's best time: a peak, as the limit is."""
    from cvmc import CvmBuilder
    from cvmc.runtime.devices.cpu import compile_graph

    os.environ["CVMC_THREADS"] = "1"
    users = _consumers(graph)
    rng = np.random.default_rng(2)
    out = {}
    for i, n in enumerate(graph.nodes):
        if n.op != "conv2d":
            continue
        b = CvmBuilder()
        xs = graph.nodes[n.inputs[0][0]].shapes[0]
        x = b.create_input(list(xs), 8)
        if graph.nodes[n.inputs[0][0]].op == "relu":  # as in the model: data >= 0 (the u8 x s8 kernel on AVX2)
            x = b.relu(x)
        w = b.create_param(graph.params[graph.nodes[n.inputs[1][0]].name], 8)
        bias = b.create_param(graph.params[graph.nodes[n.inputs[2][0]].name],
                              graph.nodes[n.inputs[2][0]].precisions[0])
        a = n.attrs
        y = b.conv2d(x, w, bias, channels=a["channels"], kernel_size=a["kernel_size"], strides=a["strides"],
                     padding=a["padding"], use_bias=True)
        rq = graph.nodes[users[i][0]]
        y = b.relu(b.cvm_right_shift(y, precision=8, shift_bit=rq.attrs["shift_bit"]))
        run = compile_graph(b.graph([y]), cache=False)
        data = rng.integers(-127, 128, size=xs).astype(np.int32)
        for _ in range(10):  # warm: the first layer measured ran 15-25% slower than the same kernel later
            run(data)
        conv = next(c for (c, _), call in zip(run.calls, run.program.calls) if call.kernel.startswith("conv2d"))
        times, kernel = [], []
        for _ in range(rounds):
            t = time.perf_counter()
            run(data)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            conv()
            kernel.append(time.perf_counter() - t)
        out[n.name] = (statistics.median(times), statistics.median(kernel), min(kernel))
    os.environ.pop("CVMC_THREADS", None)
    return out


def variant(model: pathlib.Path, seed: int, folder: pathlib.Path) -> pathlib.Path:
    """A model of `model`'s architecture that nobody tuned for, in `folder`: every param drawn at random within its
    declared precision, every cvm_right_shift's shift_bit moved by -1, 0 or +1 (at least 1). Returns its model.json,
    which the caller loads (and so verifies) as any model."""
    rng = np.random.default_rng(seed)
    doc = json.loads(model.read_text())
    op_attrs = doc["attrs"]["op_attrs"][1]
    for i, node in enumerate(doc["nodes"]):
        if node["op"] != "null" and node["attrs"].get("func_name") == "cvm_right_shift":
            attrs = json.loads(op_attrs[i])
            attrs["shift_bit"] = str(max(1, int(attrs["shift_bit"]) + int(rng.integers(-1, 2))))
            op_attrs[i] = json.dumps(attrs)
    graph = load_graph(model, model.with_name("params.bin"))
    bits = {n.name: n.precisions[0] for n in graph.nodes if n.op == "null"}
    params = {name: rng.integers(-(2 ** (bits[name] - 1) - 1), 2 ** (bits[name] - 1), size=a.shape, dtype=np.int32)
              for name, a in graph.params.items()}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(json.dumps(doc))
    (folder / "params.bin").write_bytes(write_params(params))
    return folder / "model.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(HERE / "resnet" / "model.json"))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--block", type=int, default=5, help="back-to-back calls of one system per round")
    ap.add_argument("--cooldown", type=float, default=0.1, help="seconds idle before each block")
    ap.add_argument("--time-model", default=TIME_MODEL, metavar="PATH",
                    help="cvm-runtime's timing tool (skipped where it does not exist)")
    ap.add_argument("--variant", type=int, metavar="SEED",
                    help="run on a variant of the model instead: random params, shifts moved by one (see `variant`)")
    a = ap.parse_args(argv)
    model = pathlib.Path(a.model)
    if a.variant is not None:
        model = variant(model, a.variant, pathlib.Path(tempfile.mkdtemp(prefix="cvmc-variant-")))
        print(f"a variant of {a.model} (seed {a.variant}): {model}")
    params = model.with_name("params.bin")
    graph = load_graph(model, params)
    counts = macs(graph)
    total = sum(counts.values())
    shape = graph.nodes[graph.input_id].shapes[0]
    bound = (1 << (graph.nodes[graph.input_id].precisions[0] - 1)) - 1
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="cvmc-peers-"))
    fp32, int8 = tmp / "twin_fp32.onnx", tmp / "twin_int8.onnx"
    import onnx

    onnx.save(onnx_twin(graph), str(fp32))
    quantize(fp32, int8, shape, bound)
    x = np.random.default_rng(0).integers(-bound, bound + 1, size=shape).astype(np.int32)
    xf = x.astype(np.float32)
    (tmp / "input.bin").write_bytes(x.astype(np.int8).tobytes())
    inp = model.with_name("input.bin") if model.with_name("input.bin").exists() else tmp / "input.bin"

    # ORT really runs the int8 kernels: its optimized model has a QLinearConv per conv layer
    _ort(int8, 1, tmp / "ort_optimized.onnx").run(None, {"data": xf})
    ops = Counter(n.op_type for n in onnx.load(str(tmp / "ort_optimized.onnx")).graph.node)
    convs = sum(1 for n in graph.nodes if n.op == "conv2d")
    print(f"onnxruntime's optimized int8 model: {dict(ops)}")
    if ops["QLinearConv"] < convs:
        print(f"FAIL: expected {convs} QLinearConv in onnxruntime's optimized model, got {ops['QLinearConv']}")
        return 1

    from cvmc.runtime.devices.known_answer import checked_jit_target

    target = checked_jit_target()
    print(f"cvmc's target on this host: {target} (cpu {host_target()[1]})")
    load_avg = os.getloadavg()
    cold, first = cold_compiles(model, params)
    limits = {n: vnni_limit(n) for n in (int(s) for s in a.threads.split(","))}
    results: dict[int, dict[str, float | None]] = {}
    notes = []
    for threads in (int(s) for s in a.threads.split(",")):
        os.environ["CVMC_THREADS"] = str(threads)
        cv = cvmc.load_model(str(model), str(params), device="cpu")
        s8, sf = _ort(int8, threads), _ort(fp32, threads)
        systems = {"cvmc": lambda: cv.run(x), "ORT int8": lambda: s8.run(None, {"data": xf}),
                   "ORT float32": lambda: sf.run(None, {"data": xf})}
        ov = _openvino(int8, threads)
        if ov is not None:
            request, kinds = ov
            systems["OpenVINO int8"] = lambda r=request: r.infer({0: xf})
            notes.append(f"OpenVINO {threads}T convolutions: {kinds}")
        for fn in systems.values():
            fn()
        times: dict[str, list[float]] = {k: [] for k in systems}
        names = list(systems)
        for r in range(a.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                time.sleep(a.cooldown)
                for _ in range(a.block):
                    t = time.perf_counter()
                    systems[k]()
                    times[k].append(time.perf_counter() - t)
        results[threads] = {k: statistics.median(v) for k, v in times.items()}
        results[threads]["cvm-runtime CPU"] = _time_model(pathlib.Path(a.time_model), model, params, inp, threads,
                                                                max(5, a.rounds // 2))
    os.environ.pop("CVMC_THREADS", None)

    print(f"\n{model.parent.name}: {total / 1e6:.0f} M MACs ({len(counts)} conv2d/dense layers); load average "
          f"{load_avg[0]:.1f} {load_avg[1]:.1f} {load_avg[2]:.1f}; {a.rounds} interleaved rounds of {a.block} calls "
          f"each after {a.cooldown:g} s idle, medians")
    int8 = next(iter(limit_kinds()))  # the % column's: the int8 chain of this host
    for n, lim in limits.items():
        print(f"measured limit, {n} thread(s): " + ", ".join(f"{k} {v:.0f} GMAC/s" for k, v in lim.items()))
    head = f"{'system':18}" + "".join(f" {f'{n}T':>9} {'GMAC/s':>7} {'%limit':>6} {'/cvmc':>6}" for n in results)
    print(head)
    for k in results[next(iter(results))]:
        line = f"{k:18}"
        for n, res in results.items():
            v = res.get(k)
            if v is None:
                line += f" {'-':>9} {'':>7} {'':>6} {'':>6}"
                continue
            rate = total / v / 1e9
            line += (f" {v * 1e3:7.2f}ms {rate:7.0f} {100 * rate / limits[n][int8]:5.0f}% "
                     f"{v / res['cvmc']:5.2f}x")  # type: ignore[operator]
        print(line)
    if len(results) > 1:
        ts = list(results)
        print(f"cvmc {ts[0]}T -> {ts[-1]}T: x{results[ts[0]]['cvmc'] / results[ts[-1]]['cvmc']:.2f}")  # type: ignore
    print(f"cvmc cold compile (an empty cache): the first in this process {first:.2f} s (xDSL's import included); "
          f"with the compiler loaded, medians of {len(cold['1'])}: 1 compile thread "
          f"{statistics.median(cold['1']):.2f} s, {compile_threads()} {statistics.median(cold['n']):.2f} s")
    for line in notes:
        print(line)
    one_thread = limits.get(1, next(iter(limits.values())))
    kernels = conv_kernels(graph, target)
    print("\nper layer, cvmc alone (1 thread): its kernel (the tier), the layer (+ its requantization, its input's "
          "relu and pack), then its convolution kernel alone (median), then that kernel's best run against the "
          "limit's best run; % of the limit of the kernel's instruction")
    for name, (t, k, best) in layer_times(graph, a.rounds).items():
        kind, instruction = kernels[name]
        one = one_thread.get(instruction, one_thread[int8])
        rate, kernel_rate, best_rate = (counts[name] / s / 1e9 for s in (t, k, best))
        print(f"  {name:8} {counts[name] / 1e6:6.1f} M MACs {kind:34} {t * 1e3:7.3f} ms {rate:6.0f} GMAC/s "
              f"{100 * rate / one:4.0f}% | kernel {k * 1e3:7.3f} ms {kernel_rate:6.0f} GMAC/s "
              f"{100 * kernel_rate / one:4.0f}% | best {best * 1e3:7.3f} ms {100 * best_rate / one:4.0f}% "
              f"of {instruction}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
