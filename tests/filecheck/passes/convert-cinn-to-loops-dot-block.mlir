// RUN: cvm-opt %s -p 'convert-cinn-to-loops{dot_block=2,1,3}' | filecheck %s
// RUN: cvm-opt %s -p 'convert-cinn-to-loops{dot_block=32,4,1024}' | filecheck %s --check-prefix=BOUND
// RUN: not cvm-opt %s -p 'convert-cinn-to-loops{dot_block=33,4,1024}' 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: not cvm-opt %s -p 'convert-cinn-to-loops{dot_block=32,5,1024}' 2>&1 | filecheck %s --check-prefix=REGISTERS
// RUN: not cvm-opt %s -p 'convert-cinn-to-loops{dot_block=32,4,1025}' 2>&1 | filecheck %s --check-prefix=DEPTH
// RUN: not cvm-opt %s -p 'convert-cinn-to-loops{dot_block=0,1,1}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not cvm-opt %s -p 'convert-cinn-to-loops{dot_block=8,2}' 2>&1 | filecheck %s --check-prefix=COUNT

// The float Dot's register block as a pass option (MR rows, NR columns in vector registers, KC rows of rhs a
// packed panel): a tuning choice, the same bits for any block. MR 2, NR 1 register (8 f32 with the default
// 32-byte vectors: all 7 columns), KC 3: a 3 x 7 panel slot; the depth of 5 in a chunk of 3, then one of 2, each
// copying its rows of the panel, then a block of 2 x 7 accumulators (rows 0, 1) and the third row's 7. The bounds: 32 rows, 4 registers, 1024 deep, and one past each.

func.func @d(%a: tensor<3x5xf32>, %b: tensor<5x7xf32>) -> tensor<3x7xf32> {
  %c = cinn.dot %a, %b : (tensor<3x5xf32>, tensor<5x7xf32>) -> tensor<3x7xf32>
  func.return %c : tensor<3x7xf32>
}

// CHECK-LABEL: func.func @d_0_dot(
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK:         memref.alloca() : memref<21xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C3]] step
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C3]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C3]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32) {
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C2]] step
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C2]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C2]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32) {

// BOUND-LABEL: func.func @d_0_dot(
// BOUND:         memref.alloca() : memref<7168xf32>

// ROWS:      expected the option dot_block as MR,NR,KC (MR in 1..32, NR in 1..4 vector registers, KC in 1..1024), got 33,4,1024
// REGISTERS: got 32,5,1024
// DEPTH:     got 32,4,1025
// ZERO:      got 0,1,1
// COUNT:     got 8,2
