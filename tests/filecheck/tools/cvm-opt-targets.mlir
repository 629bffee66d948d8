// RUN: cvm-opt %s -p cvm-to-gpu-loops -t cuda | filecheck %s --check-prefix=CUDA
// RUN: cvm-opt %s -p cvm-to-loops -t llvm-ir | filecheck %s --check-prefix=LLVM

// The code generators as cvm-opt targets: the lowered module's kernels printed as CUDA C or LLVM IR (the host
// function that calls them is set aside).

func.func @main(%data: tensor<2x3xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<4>> {
  %shift = cvm.cvm_right_shift %data {precision = 4 : i64, shift_bit = 3 : i64} : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<4>>
  %relu = cvm.relu %shift : (tensor<2x3xi32, #cvm.prec<4>>) -> tensor<2x3xi32, #cvm.prec<4>>
  func.return %relu : tensor<2x3xi32, #cvm.prec<4>>
}

// CUDA:     extern "C" __global__ void __launch_bounds__(256) k_cvm_right_shift_relu(
// CUDA-NOT: __global__

// LLVM:     define internal void @"__cvmc_body.cvm_right_shift_relu"(ptr {{.*}}noalias{{.*}}, i64 %"begin", i64 %"end")
// LLVM:     define void @"cvm_right_shift_relu"(ptr {{.*}}%"args", i64 %"begin", i64 %"end")
// LLVM-NOT: define

// RUN: not cvm-opt %s -p cvm-to-loops -t cuda 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: not cvm-opt %s -p cvm-to-gpu-loops -t llvm-ir 2>&1 | filecheck %s --check-prefix=WRONG-LLVM

// WRONG:      -t cuda prints kernels built for a CUDA GPU, but the module's were built for x86:avx2: lower with cvm-to-gpu-loops
// WRONG-LLVM: -t llvm-ir prints kernels built for an x86 CPU, but the module's were built for cuda:any: lower with cvm-to-loops
