// RUN: cvm-opt %s -p cvm-infer-precision | filecheck %s
// RUN: cvm-opt %s -p cvm-infer-shapes,cvm-infer-precision | filecheck %s --check-prefix=BOTH

// Result precisions come from cvm_rules.infer: results written as plain tensors get their encoding, wrong
// ones are corrected, shapes are kept as written.

// CHECK-LABEL: func.func @mlp(%x: tensor<1x16xi32, #cvm.prec<8>>) -> tensor<1x4xi32, #cvm.prec<8>> {
// CHECK-NEXT:    %w = cvm.param "w" dense<1> : tensor<4x16xi32, #cvm.prec<8>>
// CHECK-NEXT:    %b = cvm.param "b" dense<[1, 2, 3, 4]> : tensor<4xi32, #cvm.prec<20>>
// CHECK-NEXT:    %0 = cvm.dense %x, %w, %b {units = 4 : i64} : (tensor<1x16xi32, #cvm.prec<8>>, tensor<4x16xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<20>>) -> tensor<1x4xi32, #cvm.prec<22>>
// CHECK-NEXT:    %1 = cvm.elemwise_add %0, %0 : (tensor<1x4xi32, #cvm.prec<22>>, tensor<1x4xi32, #cvm.prec<22>>) -> tensor<1x4xi32, #cvm.prec<23>>
// CHECK-NEXT:    %2 = cvm.clip %1 {a_min = -127 : i64, a_max = 127 : i64} : (tensor<1x4xi32, #cvm.prec<23>>) -> tensor<1x4xi32, #cvm.prec<9>>
// CHECK-NEXT:    %3 = cvm.cvm_right_shift %2 {precision = 8 : i64, shift_bit = 1 : i64} : (tensor<1x4xi32, #cvm.prec<9>>) -> tensor<1x4xi32, #cvm.prec<8>>
// CHECK-NEXT:    func.return %3 : tensor<1x4xi32, #cvm.prec<8>>
func.func @mlp(%x: tensor<1x16xi32, #cvm.prec<8>>) -> tensor<1x4xi32> {
  %w = cvm.param "w" dense<1> : tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.param "b" dense<[1, 2, 3, 4]> : tensor<4xi32, #cvm.prec<20>>
  %0 = cvm.dense %x, %w, %b {units = 4 : i64} : (tensor<1x16xi32, #cvm.prec<8>>, tensor<4x16xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<20>>) -> tensor<1x4xi32>
  %1 = cvm.elemwise_add %0, %0 : (tensor<1x4xi32>, tensor<1x4xi32>) -> tensor<1x4xi32, #cvm.prec<32>>
  %2 = cvm.clip %1 {a_min = -127 : i64, a_max = 127 : i64} : (tensor<1x4xi32, #cvm.prec<32>>) -> tensor<1x4xi32>
  %3 = cvm.cvm_right_shift %2 {precision = 8 : i64, shift_bit = 1 : i64} : (tensor<1x4xi32>) -> tensor<1x4xi32>
  func.return %3 : tensor<1x4xi32>
}

// Shapes left dynamic stay dynamic; with cvm-infer-shapes first, both are filled in.

// CHECK-LABEL: func.func @dynamic(%x: tensor<2x8xi32, #cvm.prec<8>>) -> tensor<?xi32, #cvm.prec<11>> {
// CHECK-NEXT:    %0 = cvm.sum %x {axis = array<i64: 1>} : (tensor<2x8xi32, #cvm.prec<8>>) -> tensor<?xi32, #cvm.prec<12>>
// CHECK-NEXT:    %1 = cvm.cvm_clip %0 {precision = 11 : i64} : (tensor<?xi32, #cvm.prec<12>>) -> tensor<?xi32, #cvm.prec<11>>
// BOTH-LABEL:  func.func @dynamic(%x: tensor<2x8xi32, #cvm.prec<8>>) -> tensor<2xi32, #cvm.prec<11>> {
// BOTH-NEXT:     %0 = cvm.sum %x {axis = array<i64: 1>} : (tensor<2x8xi32, #cvm.prec<8>>) -> tensor<2xi32, #cvm.prec<12>>
// BOTH-NEXT:     %1 = cvm.cvm_clip %0 {precision = 11 : i64} : (tensor<2xi32, #cvm.prec<12>>) -> tensor<2xi32, #cvm.prec<11>>
func.func @dynamic(%x: tensor<2x8xi32, #cvm.prec<8>>) -> tensor<?xi32> {
  %0 = cvm.sum %x {axis = array<i64: 1>} : (tensor<2x8xi32, #cvm.prec<8>>) -> tensor<?xi32>
  %1 = cvm.cvm_clip %0 {precision = 11 : i64} : (tensor<?xi32>) -> tensor<?xi32>
  func.return %1 : tensor<?xi32>
}
