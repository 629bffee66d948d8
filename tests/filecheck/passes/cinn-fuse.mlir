// RUN: cvm-opt %s -p cinn-mark-views,cinn-fuse | filecheck %s
// RUN: cvm-opt %s -p cinn-mark-views,cinn-fuse,convert-cinn-to-loops | filecheck %s --check-prefix=LOOPS

// Softmax from primitives: the max reduction is a kernel; sub and exp are the prologue of the sum; the division
// reads exp again, so exp is stored (two readers) and the division is its own group.

func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = cinn.reduce max %x {dim = array<i64: -1>, keep_dim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = cinn.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = cinn.exp %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = cinn.reduce sum %e {dim = array<i64: 1>, keep_dim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %y = cinn.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK:       %m = cinn.reduce max %x {cinn.group = 0 : i64, dim = array<i64: -1>, keep_dim = true}
// CHECK-NEXT:  %d = cinn.sub %x, %m {cinn.group = 1 : i64}
// CHECK-NEXT:  %e = cinn.exp %d {cinn.group = 1 : i64}
// CHECK-NEXT:  %s = cinn.reduce sum %e {cinn.group = 2 : i64, dim = array<i64: 1>, keep_dim = true}
// CHECK-NEXT:  %y = cinn.div %e, %s {cinn.group = 3 : i64}

// A chain through a view into a reduction with an epilogue: reshape is a view, mul and max the prologue of the
// sum, and the sum's epilogue (sqrt) is applied before its store; the returned reshape stays a kernel.

func.func @chain(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4xf32>, tensor<32xf32>) {
  %r = cinn.reshape %x {shape = array<i64: 0, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = cinn.mul %r, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %zero = cinn.const_scalar 0.000000e+00 : f32
  %b = cinn.max %a, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %s = cinn.reduce sum %b {dim = array<i64: 1>, keep_dim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  %q = cinn.sqrt %s : (tensor<4xf32>) -> tensor<4xf32>
  %flat = cinn.reshape %x {shape = array<i64: -1>} : (tensor<4x8xf32>) -> tensor<32xf32>
  func.return %q, %flat : tensor<4xf32>, tensor<32xf32>
}

// CHECK-LABEL: func.func @chain
// CHECK:       %r = cinn.reshape %x {cinn.view, shape = array<i64: 0, 0>}
// CHECK-NEXT:  %a = cinn.mul %r, %w {cinn.group = 1 : i64}
// CHECK-NEXT:  %zero = cinn.const_scalar 0.000000e+00 : f32 {cinn.group = 0 : i64}
// CHECK-NEXT:  %b = cinn.max %a, %zero {cinn.group = 1 : i64}
// CHECK-NEXT:  %s = cinn.reduce sum %b {cinn.group = 1 : i64, dim = array<i64: 1>, keep_dim = false}
// CHECK-NEXT:  %q = cinn.sqrt %s {cinn.group = 1 : i64}
// CHECK-NEXT:  %flat = cinn.reshape %x {cinn.group = 2 : i64, shape = array<i64: -1>}

// The lowering follows the groups: one kernel per group, named after its last member, reading the stored values.
// LOOPS-LABEL: func.func @softmax_0_reduce(
// LOOPS-LABEL: func.func @softmax_2_exp(%x: memref<4x8xf32>, %m: memref<4x1xf32>, %e: memref<4x8xf32>)
// LOOPS:         arith.subf
// LOOPS:         math.fma
// LOOPS-NOT:     math.exp
// LOOPS-LABEL: func.func @softmax_3_reduce(%e: memref<4x8xf32>, %s: memref<4x1xf32>)
// LOOPS-LABEL: func.func @softmax_4_div(%e: memref<4x8xf32>, %s: memref<4x1xf32>, %y: memref<4x8xf32>)
// LOOPS-LABEL: func.func @chain_2_const_scalar(%zero: memref<f32>)
// LOOPS-LABEL: func.func @chain_5_sqrt(%x: memref<4x8xf32>, %w: memref<8xf32>, %zero: memref<f32>, %q: memref<4xf32>)
// LOOPS:         scf.for
// LOOPS:           arith.mulf
// LOOPS:           arith.cmpf ogt
// LOOPS:           arith.cmpf uno
// LOOPS:           arith.addf
// LOOPS:         math.sqrt
// LOOPS-LABEL: func.func @chain_6_reshape(%x: memref<4x8xf32>, %flat: memref<32xf32>)
// LOOPS-NOT:   func.func @chain_0_reshape
