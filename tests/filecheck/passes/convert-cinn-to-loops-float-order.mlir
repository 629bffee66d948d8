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
