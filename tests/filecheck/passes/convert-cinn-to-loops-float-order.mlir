// RUN: cvm-opt %s -p convert-cinn-to-loops | filecheck %s
// RUN: cvm-opt %s -p 'convert-cinn-to-loops{exact_float=true}' | filecheck %s --check-prefix=EXACT

// A float sum over 33 >= 2 * FLOAT_SPLIT elements: 16 lanes in a stack buffer, filled with 0, then 2 chunks of 16
// (an inner loop over the lanes), the tail element into lane 0, and a halving tree of 15 adds. exact_float keeps
// one accumulator in index order.

func.func @net(%x: tensor<4x33xf32>) -> tensor<4xf32> {
  %s = cinn.reduce sum %x {dim = array<i64: 1>, keep_dim = false} : (tensor<4x33xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @net_0_reduce(
// CHECK:         %[[C16:.*]] = arith.constant 16 : index
// CHECK:         %[[C32:.*]] = arith.constant 32 : index
// CHECK:         scf.parallel
// CHECK:           %[[LANES:.*]] = memref.alloca() : memref<16xf32>
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[C16]] step %{{.*}} {
// CHECK-NEXT:        memref.store %{{.*}}, %[[LANES]]
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %[[C32]] step %[[C16]] {
// CHECK-NEXT:        scf.for %[[J:.*]] = %{{.*}} to %[[C16]] step %{{.*}} {
// CHECK-NEXT:          %[[AT:.*]] = arith.addi %[[I]], %[[J]]
// CHECK-NEXT:          memref.load %[[LANES]][%[[J]]]
// CHECK-NEXT:          memref.load %x[%{{.*}}, %[[AT]]]
// CHECK-NEXT:          arith.addf
// CHECK-NEXT:          memref.store %{{.*}}, %[[LANES]][%[[J]]]
// CHECK:           memref.load %x[%{{.*}}, %[[C32]]]
// CHECK-COUNT-16:  memref.load %[[LANES]]
// CHECK-COUNT-15:  arith.addf
// CHECK-NEXT:      memref.store

// EXACT-LABEL: func.func @net_0_reduce(
// EXACT-NOT:     memref.alloca
// EXACT:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// EXACT:           arith.addf
// EXACT:           scf.yield

// An element-wise Max (Min alike) is numpy's maximum: a if a is NaN, else a if a > b, else b (four vector
// instructions); exact_float keeps IEEE 754-2019 maximum (-0 < +0), the bits of earlier releases.
func.func @mx(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %z = cinn.max %x, %y : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  func.return %z : tensor<64xf32>
}

// CHECK-LABEL: func.func @mx_0_max(
// CHECK-NOT:     arith.maximumf
// CHECK:         %[[A:.*]] = memref.load %x
// CHECK-NEXT:    %[[B:.*]] = memref.load %y
// CHECK-NEXT:    %[[GT:.*]] = arith.cmpf ogt, %[[A]], %[[B]] : f32
// CHECK-NEXT:    %[[P:.*]] = arith.select %[[GT]], %[[A]], %[[B]] : f32
// CHECK-NEXT:    %[[NAN:.*]] = arith.cmpf uno, %[[A]], %[[A]] : f32
// CHECK-NEXT:    arith.select %[[NAN]], %[[A]], %[[P]] : f32
// EXACT-LABEL: func.func @mx_0_max(
// EXACT:         arith.maximumf

// exp on f32 is loop-level arithmetic (it vectorizes); exact_float keeps math.exp (libm expf)
func.func @e(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = cinn.exp %x : (tensor<64xf32>) -> tensor<64xf32>
  func.return %y : tensor<64xf32>
}

// CHECK-LABEL: func.func @e_0_exp(
// CHECK-NOT:     math.exp
// CHECK-COUNT-9: math.fma
// EXACT-LABEL: func.func @e_0_exp(
// EXACT:         math.exp

// exact_float: an NCHW convolution runs by output rows: one (n, o) plane per parallel iteration, the row cleared, then per
// input channel and filter row (guarded by scf.if) one multiply-add loop along the row per filter column, over
// the columns where that tap lands inside the input (static bounds: q = 0 starts at column 1 with padding 1).
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32> {
  %y = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
  func.return %y : tensor<1x3x5x5xf32>
}

// EXACT-LABEL: func.func @conv_0_conv(%x: memref<1x2x5x5xf32>, %w: memref<3x2x3x3xf32>, %y: memref<1x3x5x5xf32>) {
// EXACT:         "scf.parallel"
// EXACT:           scf.for
// EXACT:             scf.for
// EXACT:               memref.store %{{.*}}, %y
// EXACT:             scf.for
// EXACT:               scf.if %{{.*}} {
// EXACT:                 memref.load %w
// EXACT:                 scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// EXACT-NEXT:              arith.addi
// EXACT-NEXT:              memref.load %x
// EXACT-NEXT:              memref.load %y
// EXACT-NEXT:              arith.mulf
// EXACT-NEXT:              arith.addf
// EXACT-NEXT:              memref.store %{{.*}}, %y

// The default float order: padded-row micro-kernels (passes/loops/cinn_conv.py). One (n, block of output
// channels, output row) per parallel iteration, two stack slots (the accumulator row, kh padded input rows), the
// row cleared; per input channel the kh rows copied (zero outside the input, scf.if per row), the kh * kw weights
// loaded once, then one loop over the whole output row doing kh * kw fused multiply-adds per accumulator load and store;
// the accumulators stored to y at the end.
// CHECK-LABEL: func.func @conv_0_conv(%x: memref<1x2x5x5xf32>, %w: memref<3x2x3x3xf32>, %y: memref<1x3x5x5xf32>) {
// CHECK:         "scf.parallel"
// CHECK:           %[[ACC:.*]] = memref.alloca() : memref<5xf32>
// CHECK-NEXT:      %[[ROWS:.*]] = memref.alloca() : memref<21xf32>
// CHECK:           scf.for
// CHECK-NEXT:        memref.store %{{.*}}, %[[ACC]]
// CHECK:           scf.for
// CHECK:             scf.if
// CHECK:               memref.load %x
// CHECK-NEXT:          memref.store %{{.*}}, %[[ROWS]]
// CHECK:             } else {
// CHECK-COUNT-9:     memref.load %w
// CHECK:             scf.for
// CHECK-COUNT-9:       memref.load %[[ROWS]]
// CHECK:               memref.load %[[ACC]]
// CHECK-COUNT-9:       math.fma
// CHECK:               memref.store %{{.*}}, %[[ACC]]
// CHECK:           scf.for
// CHECK-NEXT:        memref.load %[[ACC]]
// CHECK-NEXT:        memref.store %{{.*}}, %y

// exact_float, other layouts: one output element per parallel iteration, the taps in scf.for, loads guarded by scf.if.
func.func @conv_nhwc(%x: tensor<1x5x5x2xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x5x5x3xf32> {
  %y = cinn.conv forward NHWC EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x5x5x2xf32>, tensor<3x2x3x3xf32>) -> tensor<1x5x5x3xf32>
  func.return %y : tensor<1x5x5x3xf32>
}

// EXACT-LABEL: func.func @conv_nhwc_0_conv(%x: memref<1x5x5x2xf32>, %w: memref<3x2x3x3xf32>, %y: memref<1x5x5x3xf32>) {
// EXACT:         "scf.parallel"
// EXACT:           scf.for
// EXACT:             scf.for
// EXACT:               scf.for
// EXACT:                 %{{.*}} = scf.if %{{.*}} -> (f32) {
// EXACT:                   memref.load %x
// EXACT:                   memref.load %w
// EXACT:                   arith.mulf
// EXACT:                   arith.addf
// EXACT:                 } else {
// EXACT:           memref.store %{{.*}}, %y

// The default float order runs NHWC through the same padded-row loops; only the copies index as NHWC.
// CHECK-LABEL: func.func @conv_nhwc_0_conv(
// CHECK:         "scf.parallel"
// CHECK:           memref.alloca() : memref<5xf32>
// CHECK:           memref.load %x[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x5x5x2xf32>
// CHECK:           memref.store %{{.*}}, %y[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x5x5x3xf32>

