// RUN: cvm-opt %s -p cinn-mark-views | filecheck %s
// RUN: cvm-opt %s -p cinn-mark-views,convert-cinn-to-loops | filecheck %s --check-prefix=LOOPS

// Element-moving ops whose result is not returned become views: no kernel; their readers load through the index
// map (transpose swaps the indices, slice offsets them, broadcast_to drops the broadcast axis).

func.func @views(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<8x2xf32>, tensor<4x8xf32>) {
  %t = cinn.transpose %x {axis = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = cinn.slice %t {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 3>} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  %e = cinn.exp %s : (tensor<8x2xf32>) -> tensor<8x2xf32>
  %bb = cinn.broadcast_to %b {out_shape = array<i64: 4, 8>, broadcast_axes = array<i64: 1>} : (tensor<8xf32>) -> tensor<4x8xf32>
  %i = cinn.identity %bb : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %e, %i : tensor<8x2xf32>, tensor<4x8xf32>
}

// CHECK:      %t = cinn.transpose %x {cinn.view, axis = array<i64: 1, 0>}
// CHECK-NEXT: %s = cinn.slice %t {cinn.view, axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 3>}
// CHECK-NEXT: %e = cinn.exp %s :
// CHECK-NEXT: %bb = cinn.broadcast_to %b {cinn.view, out_shape = array<i64: 4, 8>, broadcast_axes = array<i64: 1>}
// The returned identity is stored: no view.
// CHECK-NEXT: %i = cinn.identity %bb :

// LOOPS-NOT:     func.func @views_0_transpose
// LOOPS-NOT:     func.func @views_1_slice
// LOOPS-LABEL:   func.func @views_2_exp(%x: memref<4x8xf32>, %e: memref<8x2xf32>)
// LOOPS:         ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// LOOPS-NEXT:      %[[J1:.*]] = arith.addi %[[J]], %{{.*}} : index
// LOOPS-NEXT:      %{{.*}} = memref.load %x[%[[J1]], %[[I]]] : memref<4x8xf32>
// LOOPS-LABEL:   func.func @views_4_identity(%b: memref<8xf32>, %i: memref<4x8xf32>)
// LOOPS:         ^{{.*}}(%[[I:.*]]: index, %[[J:.*]]: index):
// LOOPS-NEXT:      %{{.*}} = memref.load %b[%[[J]]] : memref<8xf32>

// A transpose an integer dot reads is copied once, not viewed: the dot's inner loop runs along rows of its operands.
func.func @dot_of_transpose(%x: tensor<4x8xi32>, %w: tensor<4x8xi32>) -> tensor<4x4xi32> {
  %t = cinn.transpose %w {axis = array<i64: 1, 0>} : (tensor<4x8xi32>) -> tensor<8x4xi32>
  %y = cinn.dot %x, %t : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>
  func.return %y : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @dot_of_transpose
// CHECK:       %t = cinn.transpose %w {axis = array<i64: 1, 0>} :
// LOOPS-LABEL: func.func @dot_of_transpose_0_transpose(
// LOOPS-LABEL: func.func @dot_of_transpose_1_dot(

// A float 2-D dot reads it as a view (its micro-kernel packs rhs panels): no transpose kernel.
func.func @float_dot_of_transpose(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %t = cinn.transpose %w {axis = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %y = cinn.dot %x, %t : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @float_dot_of_transpose
// CHECK:       %t = cinn.transpose %w {cinn.view, axis = array<i64: 1, 0>} :
// LOOPS-NOT:   func.func @float_dot_of_transpose_0_transpose(
// LOOPS-LABEL: func.func @float_dot_of_transpose_1_dot(
// LOOPS:         memref.load %w[%{{.*}}, %{{.*}}] : memref<4x8xf32>
