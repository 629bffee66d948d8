// RUN: cvm-opt %s -p cvm-infer-shapes --split-input-file --verify-diagnostics | filecheck %s

// Result shapes come from cvm_rules.infer, in order; written encodings are kept (a plain result stays plain),
// and the function's signature follows what it returns.

// CHECK-LABEL: func.func @chain(%x: tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<2x4xi32> {
// CHECK-NEXT:    %0 = cvm.transpose %x {axes = array<i64: 0, 2, 1>} : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<2x4x3xi32, #cvm.prec<8>>
// CHECK-NEXT:    %1 = cvm.relu %0 : (tensor<2x4x3xi32, #cvm.prec<8>>) -> tensor<2x4x3xi32>
// CHECK-NEXT:    %2 = cvm.sum %1 {axis = array<i64: 2>} : (tensor<2x4x3xi32>) -> tensor<2x4xi32>
// CHECK-NEXT:    func.return %2 : tensor<2x4xi32>
func.func @chain(%x: tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<?x?xi32> {
  %0 = cvm.transpose %x {axes = array<i64: 0, 2, 1>} : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<?x?x?xi32, #cvm.prec<8>>
  %1 = cvm.relu %0 : (tensor<?x?x?xi32, #cvm.prec<8>>) -> tensor<1x1x1xi32>
  %2 = cvm.sum %1 {axis = array<i64: 2>} : (tensor<1x1x1xi32>) -> tensor<?x?xi32>
  func.return %2 : tensor<?x?xi32>
}

// Two results, and a reshape with MXNet codes.

// CHECK-LABEL: func.func @two_results(
// CHECK:         %0, %1 = cvm.get_valid_counts %x : (tensor<1x4x6xi32, #cvm.prec<8>>) -> (tensor<1xi32, #cvm.prec<6>>, tensor<1x4x6xi32, #cvm.prec<8>>)
// CHECK-NEXT:    %2 = cvm.reshape %1 {shape = array<i64: -3, 0>} : (tensor<1x4x6xi32, #cvm.prec<8>>) -> tensor<4x6xi32>
func.func @two_results(%x: tensor<1x4x6xi32, #cvm.prec<8>>) {
  %0, %1 = cvm.get_valid_counts %x : (tensor<1x4x6xi32, #cvm.prec<8>>) -> (tensor<?xi32, #cvm.prec<6>>, tensor<?x?x?xi32, #cvm.prec<8>>)
  %2 = cvm.reshape %1 {shape = array<i64: -3, 0>} : (tensor<?x?x?xi32, #cvm.prec<8>>) -> tensor<?x?xi32>
  func.return
}

// -----

// The function's inputs must carry a shape and a precision: inference starts from them.

func.func @untyped_input(%x: tensor<?x4xi32, #cvm.prec<8>>) {
  %0 = cvm.relu %x : (tensor<?x4xi32, #cvm.prec<8>>) -> tensor<?x4xi32>
  func.return
}
// CHECK: cvm.relu: operand 0 has no static shape and precision (tensor<?x4xi32, #cvm.prec<8>>)

// -----

// A rule the inferred operands break is reported with the rule's message.

func.func @broken(%x: tensor<2x3xi32, #cvm.prec<8>>) {
  %0 = cvm.relu %x : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<?x?xi32>
  %1 = cvm.elemwise_add %0, %x : (tensor<?x?xi32>, tensor<2x3xi32, #cvm.prec<8>>) -> tensor<?x?xi32>
  %2 = cvm.reshape %1 {shape = array<i64: 4, -1>} : (tensor<?x?xi32>) -> tensor<?x?xi32>
  func.return
}
// CHECK: cvm.reshape: 'shape' [4, -1] gives [4, 1]: 4 elements, expected 6
