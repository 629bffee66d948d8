"""Launch descriptions of the CUDA path: the multiply-adds a kernel performs (`cvmc.codegen.cuda_launch.kernel_macs`),
`launches.json` (`cvmc.runtime.devices.cuda.emit_sources`) over the corpus, and the paper estimate of
bench/gpu_estimate.py built on them."""

from __future__ import annotations

import importlib.util
import json
import math
import pathlib
import re

import pytest
from conftest import case_params, corpus_cases

from cvmc.codegen.cuda import body_symbol
from cvmc.codegen.cuda_launch import kernel_loads, kernel_macs
from cvmc.codegen.llvm import parse_loop_level
from cvmc.runtime.devices import cuda as rc
from cvmc.runtime.frontend.graph import load_graph

ROOT = pathlib.Path(__file__).resolve().parents[2]


def parallel(n: int, body: str) -> str:
    """A 1-D `scf.parallel` over [0, n) in generic form (xDSL 0.74 has no custom syntax for it)."""
    return (f'%p0 = arith.constant 0 : index\n%p1 = arith.constant 1 : index\n%pn = arith.constant {n} : index\n'
            f'"scf.parallel"(%p0, %pn, %p1) <{{operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> ({{\n'
            f'^bb0(%i: index):\n{body}\nscf.reduce\n}}) : (index, index, index) -> ()')  # fmt: skip


MAC = """%a = memref.load %x[%k] : memref<64xi32>
%b = memref.load %w[%k] : memref<64xi32>
%m = arith.muli %a, %b : i32
%s0 = memref.load %acc[%i] : memref<64xi32>
%s = arith.addi %s0, %m : i32
memref.store %s, %acc[%i] : memref<64xi32>"""


def kernel(name: str, body: str) -> str:
    return (f"func.func @{name}(%acc: memref<64xi32>, %x: memref<64xi32>, %w: memref<64xi32>) {{\n"
            f"%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n{body}\nfunc.return\n}}")


def macs_of(body: str) -> tuple[int, bool]:
    module = parse_loop_level(kernel("k", body))
    return kernel_macs(next(iter(module.ops)))  # pyright: ignore[reportArgumentType]


def loop(n: int | str, body: str, iv: str = "%k") -> str:
    bound = f"%n{abs(hash((n, body))) % 10**8}"
    head = f"{bound} = arith.constant {n} : index\n" if isinstance(n, int) else ""
    ub = bound if isinstance(n, int) else n
    return f"{head}scf.for {iv} = %c0 to {ub} step %c1 {{\n{body}\n}}"


def test_macs_are_the_trips_around_each_multiply_add():
    assert macs_of(parallel(4, loop(5, loop(7, MAC), iv="%j"))) == (4 * 5 * 7, True)
    assert macs_of(parallel(4, loop(0, MAC))) == (0, True)  # a loop of no trips
    assert macs_of(parallel(1, loop(1, MAC))) == (1, True)


def test_a_product_that_is_not_added_or_an_index_is_no_multiply_add():
    stored = "%a = memref.load %x[%k] : memref<64xi32>\n%m = arith.muli %a, %a : i32\n" \
             "memref.store %m, %acc[%k] : memref<64xi32>"  # fmt: skip
    index = "%m = arith.muli %k, %k : index\n%s = arith.addi %m, %k : index\n" \
            "%v = arith.index_cast %s : index to i32\nmemref.store %v, %acc[%k] : memref<64xi32>"  # fmt: skip
    assert macs_of(parallel(4, loop(8, stored))) == (0, True)
    assert macs_of(parallel(4, loop(8, index))) == (0, True)


def test_a_bound_depending_on_an_enclosing_loop_is_enumerated():
    """A tiled loop with a tail: tiles of 16 over 20 elements give 16 + 4 trips, not 2 * 16."""
    body = ("%c16 = arith.constant 16 : index\n%c20 = arith.constant 20 : index\n"
            "%t0 = arith.muli %t, %c16 : index\n%left = arith.subi %c20, %t0 : index\n"
            "%n = arith.minsi %c16, %left : index\n" + loop("%n", MAC))  # fmt: skip
    assert macs_of(parallel(3, loop(2, body, iv="%t"))) == (3 * 20, True)


def test_loads_are_counted_as_multiply_adds_are():
    module = parse_loop_level(kernel("k", parallel(4, loop(5, MAC) + "\n" + loop(3, MAC))))
    assert kernel_loads(next(iter(module.ops))) == 4 * (5 + 3) * 3  # pyright: ignore[reportArgumentType]


def test_a_block_kernel_counts_every_block_and_thread_once():
    """`for b = block_id to 3 step grid_dim { for v = thread_id to 5 step block_dim { ... } }`: 3 * 5 trips, however
    the launch deals them out; `cvmc.dp4a` is four multiply-adds."""
    body = ('%z = arith.constant 0 : i32\n%c3 = arith.constant 3 : index\n%c5 = arith.constant 5 : index\n'
            '%b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index\n'
            '%g = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index\n'
            '%t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index\n'
            '%d = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index\n'
            'scf.for %i = %b to %c3 step %g {\nscf.for %v = %t to %c5 step %d {\n'
            '%a = memref.load %x[%v] : memref<64xi32>\n%r = "cvmc.dp4a"(%a, %a, %z) : (i32, i32, i32) -> i32\n'
            'memref.store %r, %acc[%v] : memref<64xi32>\n}\n}')  # fmt: skip
    module = parse_loop_level(kernel("k", body))
    op = next(iter(module.ops))
    assert kernel_macs(op) == (3 * 5 * 4, True)  # pyright: ignore[reportArgumentType]
    assert kernel_loads(op) == 3 * 5  # pyright: ignore[reportArgumentType]


def test_a_bound_read_from_memory_is_not_exact():
    body = ("%z = memref.load %x[%c0] : memref<64xi32>\n%n = arith.index_cast %z : i32 to index\n"
            + loop("%n", MAC) + "\n" + loop(3, MAC))  # fmt: skip
    assert macs_of(parallel(2, body)) == (2 * 3, False)  # the loop of run-time trips is left out, and said so


# --------------------------------------------------------------------------------------------------------------
# launches.json over the corpus
# --------------------------------------------------------------------------------------------------------------

MAC_CASES = [c for c in corpus_cases("op", "chain", "model")
             if c.name.startswith(("conv2d_", "dense_", "chain_", "model_"))]  # fmt: skip


def graph_macs(case: pathlib.Path) -> int:
    """The multiply-adds of a model's conv2d and dense nodes, from its shapes (no padding of the reduction)."""
    doc = json.loads((case / "model.json").read_text())
    shapes = doc["attrs"]["shape"][1]
    total = 0
    for i, node in enumerate(doc["nodes"]):
        op = node.get("attrs", {}).get("func_name")
        if op in ("conv2d", "dense"):
            weight = shapes[node["inputs"][1][0]]
            total += math.prod(shapes[i]) * math.prod(weight[1:])
    return total


_EMITTED: dict[pathlib.Path, tuple[list[pathlib.Path], list[dict], str]] = {}


def emitted(case: pathlib.Path, tmp_path: pathlib.Path) -> tuple[list[pathlib.Path], list[dict], str]:
    """What `emit_sources` writes for a case (once per case and session: several tests read it)."""
    if case not in _EMITTED:
        paths = rc.emit_sources(load_graph((case / "model.json").read_bytes(), case_params(case)), tmp_path)
        _EMITTED[case] = paths, json.loads(paths[2].read_text()), paths[0].read_text()
    return _EMITTED[case]


def body_of(source: str, symbol: str) -> str:
    """The device function holding kernel `symbol`'s body."""
    match = re.search(rf"void {body_symbol(symbol)}\(.*?\n}}\n", source, re.S)
    assert match, symbol
    return match.group(0)


SHARED = re.compile(r"__shared__ (i8|i16|i32|i64|u8) v\d+\[(\d+)\];")
BYTES = {"i8": 1, "u8": 1, "i16": 2, "i32": 4, "i64": 8}


@pytest.mark.parametrize("case", MAC_CASES, ids=lambda d: d.name)
def test_launches_json_describes_every_launch(case, tmp_path):
    paths, launches, source = emitted(case, tmp_path)
    assert [p.name for p in paths] == ["kernels.cu", "host.mlir", "launches.json"]
    assert len(launches) == paths[1].read_text().count("cvm_sched.call")
    for launch in launches:
        assert set(launch) == {"kernel", "grid", "block", "shared_bytes", "macs", "macs_exact", "loads", "work",
                               "read_bytes", "written_bytes"}  # fmt: skip
        assert f'__global__ void __launch_bounds__(256) {launch["kernel"]}(' in source
        assert len(launch["grid"]) == len(launch["block"]) == 3 and launch["grid"][1:] == launch["block"][1:] == [1, 1]
        grid, block, work = launch["grid"][0], launch["block"][0], launch["work"]
        body = body_of(source, launch["kernel"])
        if "one thread runs the kernel" in body:
            assert (grid, block, work) == (1, 1, 1)
        else:  # blocks of 256 threads, enough of them for the work, at most 32 a multiprocessor
            assert block == 256 and 1 <= grid <= min(max(1, work), 32 * rc.EMIT_MULTIPROCESSORS)
            assert grid * block >= min(work, 32 * rc.EMIT_MULTIPROCESSORS * block)
        # shared memory: the kernel's own __shared__ arrays, and a kernel sharing them meets at barriers
        shared = sum(BYTES[t] * int(n) for t, n in SHARED.findall(body))
        assert launch["shared_bytes"] == shared <= 48 * 1024
        assert ("__syncthreads();" in body) == (shared > 0)
        assert launch["macs_exact"]
    macs, want = sum(launch["macs"] for launch in launches), graph_macs(case)
    # the GPU schedule rounds an int8 reduction up to whole __dp4a words (4 products), pads a split reduction to
    # a multiple of its threads and repeats the last output on a block kernel's spare threads: at most 2x here
    assert want <= macs <= 2 * want
    if case.name in UNPADDED:
        assert macs == want


# cases whose every reduction is a multiple of 4 (whole __dp4a words) and whose outputs need no spare threads
UNPADDED = {"conv2d_000", "conv2d_005", "conv2d_006", "dense_003", "dense_004", "dense_006", "model_digits_mlp_000"}


@pytest.mark.parametrize("case", MAC_CASES, ids=lambda d: d.name)
def test_every_launch_with_multiply_adds_has_threads_for_them(case, tmp_path):
    """The bound of issue 15: a launch with `macs > 0` has at least min(macs / 64, 65,536) threads with work, and
    an int8 conv2d or dense (its packed operands are bytes) multiplies through `__dp4a`."""
    _, launches, source = emitted(case, tmp_path)
    assert any(launch["macs"] for launch in launches)
    for launch in launches:
        threads = min(launch["grid"][0] * launch["block"][0], launch["work"])
        assert launch["macs"] == 0 or threads >= min(launch["macs"] // 64, 65536), launch
        body = body_of(source, launch["kernel"])
        if launch["macs"] and "const i8 *__restrict__" in body.split("{", 1)[0]:
            assert "__dp4a(" in body, launch["kernel"]


def test_the_bench_model_convolutions_are_int8_on_dp4a(tmp_path):
    case = next(c for c in MAC_CASES if c.name.startswith("model_bench_resnet"))
    _, launches, source = emitted(case, tmp_path)
    convs = [launch for launch in launches if launch["kernel"].startswith("k_conv2d")]
    nodes = json.loads((case / "model.json").read_text())["nodes"]
    assert len(convs) == sum(n.get("attrs", {}).get("func_name") == "conv2d" for n in nodes) == 8
    assert all("__dp4a(" in body_of(source, c["kernel"]) for c in convs)
    big = [c for c in convs if c["macs"] >= 64 * 65536]
    assert len(big) == 7 and all(min(c["grid"][0] * c["block"][0], c["work"]) >= 65536 for c in big)
    # a thread computes 4 output channels: each input word is loaded once for 4 __dp4a, 1.25 loads a __dp4a (with
    # the staged weight rows, the partial sums, bias and epilogue: under 1.5 in all), not 2
    assert all(c["loads"] < 1.5 * c["macs"] / 4 for c in big)
    # each output's reduction split over threads of a block, the block's weight rows staged in shared memory
    assert all(c["shared_bytes"] > 4 * 256 and body_of(source, c["kernel"]).count("__syncthreads();") == 2
               for c in big)


# --------------------------------------------------------------------------------------------------------------
# The paper estimate
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def estimator():
    spec = importlib.util.spec_from_file_location("gpu_estimate", ROOT / "bench" / "gpu_estimate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch(**kw):
    base = {"kernel": "k_k", "grid": [1, 1, 1], "block": [256, 1, 1], "shared_bytes": 0, "macs": 0, "work": 256,
            "read_bytes": 0, "written_bytes": 0}  # fmt: skip
    return base | kw


def test_estimate_bounds(estimator):
    e = estimator
    # one thread per 4 clocks until the machine's peak: 256 threads are thread-bound
    one = e.estimate(launch(macs=256 * 1000), dp4a=False)
    assert one["threads"] == 256 and one["compute_s"] == pytest.approx(1000 * e.DEPENDENT_LATENCY / e.CLOCK_HZ)
    # threads past the peak's need do not help: the peak bound
    many = e.SMS * e.IMAD_PER_CLOCK_PER_SM * e.DEPENDENT_LATENCY
    for threads in (many, many + 1, 10 * many):
        grid = -(-threads // 256)
        got = e.estimate(launch(macs=10**9, grid=[grid, 1, 1], work=threads), dp4a=False)
        assert got["compute_s"] == pytest.approx(10**9 / (e.SMS * e.IMAD_PER_CLOCK_PER_SM * e.CLOCK_HZ))
    assert e.estimate(launch(macs=10**9, grid=[4096, 1, 1], work=10**6), dp4a=True)["compute_s"] == \
        pytest.approx(10**9 / (4 * e.SMS * e.DP4A_PER_CLOCK_PER_SM * e.CLOCK_HZ))  # fmt: skip
    # work below the grid's threads: only the threads with work count
    assert e.estimate(launch(work=3), dp4a=False)["threads"] == 3
    # memory-bound: bytes over the bandwidth, plus the launch
    mem = e.estimate(launch(read_bytes=3 * 10**9, written_bytes=350 * 10**6), dp4a=False)
    assert mem["time_s"] == pytest.approx(1e-3 + e.LAUNCH_OVERHEAD_S)
    # load-bound: load instructions over the LD/ST units' rate, past a compute bound below it
    loads = e.SMS * e.LOADS_PER_CLOCK_PER_SM * e.CLOCK_HZ * 1e-3  # a millisecond of loads
    got = e.estimate(launch(loads=loads, macs=10**6, grid=[4096, 1, 1], work=10**6), dp4a=True)
    assert got["loads_s"] == pytest.approx(1e-3) and got["compute_s"] < 1e-3
    assert got["time_s"] == pytest.approx(1e-3 + e.LAUNCH_OVERHEAD_S)


def test_estimate_finds_the_dp4a_kernels(estimator):
    source = ("static __device__ __forceinline__ void b_a(int *x) {\n  x[0] = __dp4a(x[1], x[2], x[3]);\n}\n"
              "static __device__ __forceinline__ void b_b(int *x) {\n  x[0] = x[1];\n}\n")  # fmt: skip
    assert estimator.kernels_using_dp4a(source) == {"k_a"}


def test_estimate_runs_on_a_launches_json(estimator, tmp_path, capsys):
    case = next(c for c in MAC_CASES if c.name.startswith("model_digits_mlp"))
    rc.emit_sources(load_graph((case / "model.json").read_bytes(), case_params(case)), tmp_path)
    assert estimator.main([str(case), "--launches", str(tmp_path / "launches.json"), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "H100 SXM paper estimate:" in out and "cpu device, measured median of 1:" in out
    assert f"{graph_macs(case) / 1e6:.1f} M multiply-adds ({graph_macs(case) / 1e6:.1f} M on __dp4a)" in out


@pytest.mark.parametrize(("a", "b"), [(7, 2), (-7, 2), (7, -2), (-7, -2), (2**62 + 1, 3), (-(2**62) - 1, 3),
                                      (2**53 + 1, 1), (-(2**53) - 1, -1), (5, 0)])
def test_a_signed_division_in_a_bound_rounds_toward_zero_exactly(a, b):
    """`arith.divsi` in a launch bound as the GPU computes it: toward zero, exact past 2^53 (where a float
    quotient is not); division by zero, which a verified kernel never reaches, evaluates to 0."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType, IntegerAttr

    from cvmc.codegen.cuda_launch import _evaluate

    x, y = (arith.ConstantOp(IntegerAttr(v, IndexType())) for v in (a, b))
    div = arith.DivSIOp(x.result, y.result)
    expected = 0 if b == 0 else (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1)
    assert _evaluate(div.result, {}) == expected
