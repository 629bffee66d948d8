# pyright: basic
"""`convert-cvm-to-loops`: each outlined kernel of a bufferized module (`cvm-bufferize`) gets its loop nest.

An outlined kernel is a `func.func` over memrefs whose body is still cvm ops on tensors, between the
`cvm_sched.load`s of what it reads and the `cvm_sched.store`s of what it writes:

    func.func @conv2d_cvm_right_shift(%out: memref<1x4x8x8xi32>, %x: memref<1x10x10x3xi16>, %w: ...) {
      %0 = cvm_sched.load %x : memref<1x10x10x3xi16> -> tensor<1x10x10x3xi16>
      %1 = cvm_sched.load %w : ...
      %c = cvm.conv2d %0, %1 {...} : ...
      %s = cvm.cvm_right_shift %c {...} : ...
      cvm_sched.store %s, %out : ...
      func.return
    }

One pattern per operator family (the kernel's anchor: elementwise, computed, conv2d, dense, pack, concatenate,
copy, get_valid_counts, non_max_suppression) replaces it with the same function whose body is its loop nest
(`loops.kernels`, `loops.ops`, `loops.x86`): the anchor's loops with the elementwise epilogue fused in, storing
into the argument each value was stored to. For a GPU target (`#cvmc.target<cuda...>`) the GPU's own patterns come
first (`loops.gpu`: conv2d, dense, pack and concatenate). The host `@main`, the globals and any function that is
no outlined kernel are left as they are. The kernels then follow the loop level contract (`codegen/llvm.py`,
`codegen/cuda.py`); the runtime reads the host (`runtime/driver/host.py`).

The pass requires `cvm-bufferize` to have run (the pipeline `cvm-to-loops` is the contract): a module whose
`@main` is still on tensors is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects.cvm import CvmOperator, PrecisionAttr, cvm_attrs
from cvmc.dialects.cvm_sched import LoadOp, PackOp, StoreOp
from cvmc.passes.loops import kernels
from cvmc.passes.loops.kernels import Group, KernelArg, KernelCall, KernelParts, Node, Step, kernel_parts, op_kind
from cvmc.passes.loops.target import Target, module_target
from cvmc.passes.loops.views import layout_of


def _packed(t: object) -> bool:
    """A `cvm_sched.pack` result: a tensor without a cvm precision."""
    return isinstance(t, TensorType) and not isinstance(t.encoding, PrecisionAttr)


def kernel_kind(kernel: func.FuncOp) -> str | None:
    """The kind of an outlined kernel (`loops.kernels.Group.kind`, from its anchor: the first op after its loads), or
    None for a function that is no outlined kernel."""
    loads = False
    for op in kernel.body.block.ops:
        if isinstance(op, LoadOp):
            loads = True
        elif isinstance(op, PackOp):
            return "pack"
        elif isinstance(op, CvmOperator):
            kind = op_kind(op.op_name)
            if kind in ("conv2d", "dense") and not _packed(op.operands[0].type):
                return "compute"  # the direct loop nest of unpacked operands
            return kind
        elif loads or isinstance(op, StoreOp):
            raise PassFailedException(f"@{kernel.sym_name.data}: expected a cvm operator or cvm_sched.pack to anchor "
                                      f"the kernel, got {op.name}")
        else:
            return None
    return None


def kernel_call(kernel: func.FuncOp) -> KernelCall | None:
    """What the loop builders take for an outlined kernel (None: `kernel` is no outlined kernel): its anchor and
    epilogue as a `loops.kernels.Group`, its arguments' layouts."""
    kind = kernel_kind(kernel)
    if kind is None:
        return None
    body = [op for op in kernel.body.block.ops if not isinstance(op, LoadOp | StoreOp | func.ReturnOp)]
    anchor = body[0]
    stores = [op for op in kernel.body.block.ops if isinstance(op, StoreOp)]
    if isinstance(anchor, PackOp):
        node = Node("pack", anchor.packing(), [], [])
    else:
        assert isinstance(anchor, CvmOperator)
        node = Node(anchor.op_name, cvm_attrs(anchor), [], [])
    running = anchor.results[0]
    steps: list[Step] = []
    extras = 0
    packed: list[tuple[int, dict[str, object]]] = []
    for op in body[1:]:
        if isinstance(op, PackOp) and op.source == running:
            packed.append((-1, op.packing()))
        elif isinstance(op, CvmOperator) and len(op.results) == 1:
            sources: list[int | None] = []
            for v in op.operands:
                if v == running:
                    sources.append(None)
                else:
                    sources.append(extras)
                    extras += 1
            steps.append(Step(Node(op.op_name, cvm_attrs(op), [], []), sources))
            running = op.results[0]
        else:
            raise PassFailedException(f"@{kernel.sym_name.data}: expected an elementwise epilogue after the anchor "
                                      f"{anchor.name}, got {op.name}")
    n_packs = len(packed)
    stored = len(stores) - n_packs
    group = Group(node, kind, inputs=[-1] * len(anchor.operands), epilogue=steps, extras=[-1] * extras,
                  outputs=[-1] * max(stored, 1), packed=packed, stores_output=stored > 0)
    zero_point = 0
    if kind == "conv2d":
        x = anchor.operands[0].owner
        if isinstance(x, LoadOp) and x.zero_point is not None:
            zero_point = x.zero_point.value.data
    types: list[MemRefType] = []
    for a in kernel.body.block.args:
        assert isinstance(a.type, MemRefType)  # a bufferized kernel's arguments
        types.append(a.type)
    args = [KernelArg(-1, layout_of(t)) for t in types]
    out_shape = anchor.results[0].type
    assert isinstance(out_shape, TensorType)
    return KernelCall(group, args, types, (), tuple(out_shape.get_shape()), zero_point)


@dataclass
class LowerKernel(RewritePattern):
    """An outlined kernel of the kinds `kinds` (`loops.kernels.Group.kind`) gets its loop nest."""

    target: Target
    kinds = frozenset[str]()

    def build(self, parts: KernelParts) -> None:
        raise NotImplementedError

    def built(self, name: str, call: KernelCall) -> func.FuncOp | None:
        parts = kernel_parts(name, call, self.target)
        self.build(parts)
        return parts.k.finish()

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        if op.sym_name.data == "main":
            return
        if kernel_kind(op) not in self.kinds:
            return
        call = kernel_call(op)
        assert call is not None
        built = self.built(op.sym_name.data, call)
        if built is not None:
            rewriter.replace(op, built)


class LowerElementwise(LowerKernel):
    kinds = frozenset({"map"})

    def build(self, parts: KernelParts) -> None:
        kernels.build_map(parts)


class LowerCompute(LowerKernel):
    kinds = frozenset({"compute"})

    def build(self, parts: KernelParts) -> None:
        kernels.build_compute(parts)


class LowerConv2d(LowerKernel):
    kinds = frozenset({"conv2d"})

    def build(self, parts: KernelParts) -> None:
        kernels.build_conv2d(parts)


class LowerDense(LowerKernel):
    kinds = frozenset({"dense"})

    def build(self, parts: KernelParts) -> None:
        kernels.build_dense(parts)


class LowerPack(LowerKernel):
    kinds = frozenset({"pack"})

    def build(self, parts: KernelParts) -> None:
        kernels.build_pack(parts)


class LowerConcatenate(LowerKernel):
    kinds = frozenset({"concatenate"})

    def build(self, parts: KernelParts) -> None:
        kernels.build_concatenate(parts)


class LowerCopy(LowerKernel):
    kinds = frozenset({"copy"})

    def build(self, parts: KernelParts) -> None:
        kernels.build_copy(parts)


class LowerVision(LowerKernel):
    kinds = frozenset({"get_valid_counts", "non_max_suppression"})

    def build(self, parts: KernelParts) -> None:
        if parts.group.kind == "get_valid_counts":
            kernels.build_get_valid_counts(parts)
        else:
            kernels.build_non_max_suppression(parts)


class LowerGpuKernel(LowerKernel):
    """The GPU's own schedule of conv2d, dense, pack and concatenate (`loops.gpu`)."""

    kinds = frozenset({"conv2d", "dense", "pack", "concatenate"})

    def built(self, name: str, call: KernelCall) -> func.FuncOp | None:
        from cvmc.passes.loops.gpu import build_gpu_kernel

        return build_gpu_kernel(name, call)


CPU_PATTERNS: tuple[type[LowerKernel], ...] = (LowerElementwise, LowerCompute, LowerConv2d, LowerDense, LowerPack,
                                              LowerConcatenate, LowerCopy, LowerVision)
GPU_PATTERNS: tuple[type[LowerKernel], ...] = (LowerGpuKernel, *CPU_PATTERNS)


def _is_bufferized(module: ModuleOp) -> bool:
    main = next((f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main"), None)
    return main is not None and all(isinstance(a.type, MemRefType) for a in main.body.block.args)


@dataclass(frozen=True)
class ConvertCvmToLoopsPass(ModulePass):
    """Give every outlined kernel of a bufferized module its loop nest, built for the module's target."""

    name = "convert-cvm-to-loops"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not _is_bufferized(op):
            raise PassFailedException("expected a bufferized module (a host @main over memrefs): run cvm-bufferize "
                                      "first, or the cvm-to-loops pipeline")
        target = module_target(op, self.target)
        patterns = GPU_PATTERNS if target.gpu is not None else CPU_PATTERNS
        applier = GreedyRewritePatternApplier([p(target) for p in patterns], dce_enabled=False)
        PatternRewriteWalker(applier, apply_recursively=False, walk_regions_first=False).rewrite_module(op)

