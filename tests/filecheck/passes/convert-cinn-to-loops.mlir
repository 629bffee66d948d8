// RUN: cvm-opt %s -p convert-cinn-to-loops | filecheck %s

// One kernel per cinn op, named <function>_<position>_<mnemonic>, taking the operands then the results as
// memrefs; the function itself is gone.

func.func @net(%x: tensor<4x8xf32>, %u: tensor<8xui8>, %i: tensor<4x8xi32>) -> tensor<4xf32> {
  %zero = cinn.const_scalar 0.000000e+00 : f32
  %0 = cinn.max %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = cinn.reduce sum %0 {dim = array<i64: 1>, keep_dim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = cinn.right_shift %u, %u : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xui8>
  %3 = cinn.compare lt %u, %u : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xi1>
  %4 = cinn.floor_mod %i, %i : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  %5 = cinn.is_nan %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
  %6 = cinn.transpose %x {axis = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %1 : tensor<4xf32>
}

// CHECK-NOT:  func.func @net(
// A constant stores into a rank-0 memref.
// CHECK-LABEL: func.func @net_0_const_scalar(%zero: memref<f32>) {
// CHECK-NEXT:    %[[C:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    memref.store %[[C]], %zero[] : memref<f32>
// CHECK-NEXT:    func.return

// Element-wise: one scf.parallel; the rank-0 operand broadcasts (loaded at []). A float Max is numpy's maximum:
// a if a is NaN, else a if a > b, else b (exact_float keeps arith.maximumf: convert-cinn-to-loops-float-order.mlir).
// CHECK-LABEL: func.func @net_1_max(%x: memref<4x8xf32>, %zero: memref<f32>, %{{.*}}: memref<4x8xf32>) {
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[A:.*]] = memref.load %x[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:      %[[B:.*]] = memref.load %zero[] : memref<f32>
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[P:.*]] = arith.select %[[GT]], %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[A]], %[[A]] : f32
// CHECK-NEXT:      %[[M:.*]] = arith.select %[[NAN]], %[[A]], %[[P]] : f32
// CHECK-NEXT:      memref.store %[[M]], %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:      scf.reduce

// A reduction: the kept axis in lanes of 8, 4 or 2 (here the 4 outputs, so no parallel loop is left), one scf.for
// over the reduced axis with one accumulator per lane in iter_args (independent add chains, each in order).
// CHECK-LABEL: func.func @net_2_reduce(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4xf32>) {
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[S0:.*]], %[[S1:.*]], %[[S2:.*]], %[[S3:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A0:.*]] = %[[Z]], %[[A1:.*]] = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]]) -> (f32, f32, f32, f32) {
// CHECK-COUNT-4:   memref.load
// CHECK-NEXT:      %[[N0:.*]] = arith.addf %[[A0]], %{{.*}} : f32
// CHECK-NEXT:      %[[N1:.*]] = arith.addf %[[A1]], %{{.*}} : f32
// CHECK:           scf.yield %[[N0]], %[[N1]], %{{.*}}, %{{.*}} : f32, f32, f32, f32
// CHECK:         memref.store %[[S0]]
// CHECK-NEXT:    memref.store %[[S1]]
// CHECK-NEXT:    memref.store %[[S2]]
// CHECK-NEXT:    memref.store %[[S3]]

// ui8 is stored as i8; its ops are the unsigned ones.
// CHECK-LABEL: func.func @net_3_right_shift(%u: memref<8xi8>, %u_1: memref<8xi8>, %{{.*}}: memref<8xi8>) {
// CHECK:           arith.shrui %{{.*}}, %{{.*}} : i8
// CHECK-LABEL: func.func @net_4_compare(%u: memref<8xi8>, %u_1: memref<8xi8>, %{{.*}}: memref<8xi1>) {
// CHECK:           arith.cmpi ult, %{{.*}}, %{{.*}} : i8

// FloorMod: the C remainder, plus the divisor where the signs differ.
// CHECK-LABEL: func.func @net_5_floor_mod(
// CHECK:           %[[R:.*]] = arith.remsi %[[X:.*]], %[[Y:.*]] : i32
// CHECK-NEXT:      %[[RN:.*]] = arith.cmpi slt, %[[R]], %{{.*}} : i32
// CHECK-NEXT:      %[[YN:.*]] = arith.cmpi slt, %[[Y]], %{{.*}} : i32
// CHECK-NEXT:      %[[OTHER:.*]] = arith.xori %[[RN]], %[[YN]] : i1
// CHECK-NEXT:      %[[NZ:.*]] = arith.cmpi ne, %[[R]], %{{.*}} : i32
// CHECK-NEXT:      %[[FIX:.*]] = arith.andi %[[NZ]], %[[OTHER]] : i1
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[R]], %[[Y]] : i32
// CHECK-NEXT:      arith.select %[[FIX]], %[[SUM]], %[[R]] : i32

// Float predicates xDSL lacks are generic math ops.
// CHECK-LABEL: func.func @net_6_is_nan(
// CHECK:           "math.isnan"(%{{.*}}) : (f32) -> i1

// Transpose gathers: out[i, j] = x[j, i].
// CHECK-LABEL: func.func @net_7_transpose(%x: memref<4x8xf32>, %{{.*}}: memref<8x4xf32>) {
// CHECK:         ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[V:.*]] = memref.load %x[%[[J]], %[[I]]] : memref<4x8xf32>
// CHECK-NEXT:      memref.store %[[V]], %{{.*}}[%[[I]], %[[J]]] : memref<8x4xf32>

// FloorDiv on floats is Python's divmod quotient: the exact remainder, (x - r) / y moved by one where r and y
// differ in sign, snapped to an integer; x / y where y = 0.
func.func @floor_div(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %q = cinn.floor_div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %q : tensor<4xf32>
}

// CHECK-LABEL: func.func @floor_div_0_floor_div(%x: memref<4xf32>, %y: memref<4xf32>, %q: memref<4xf32>) {
// CHECK:           %[[R:.*]] = "arith.remf"(%[[X:.*]], %[[Y:.*]]) : (f32, f32) -> f32
// CHECK-NEXT:      %[[QUOT:.*]] = arith.divf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[XR:.*]] = arith.subf %[[X]], %[[R]] : f32
// CHECK-NEXT:      %{{.*}} = arith.divf %[[XR]], %[[Y]] : f32
// CHECK:           math.floor
// CHECK:           math.copysign
// CHECK:           %[[BZ:.*]] = arith.cmpf oeq, %[[Y]], %{{.*}} : f32
// CHECK:           arith.select %[[BZ]], %[[QUOT]], %{{.*}} : f32
