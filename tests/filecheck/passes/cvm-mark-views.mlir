// RUN: cvm-opt %s -p cvm-mark-views --split-input-file | filecheck %s

// A reshape, a positive-stride slice and a transpose of the input are views of its buffer: each becomes a
// cvm_sched.view of the input itself (a view of a view is composed into one layout over the base). The add that
// reads them stays an operator: a kernel.

func.func @main(%data: tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<9>> {
  %r = cvm.reshape %data {shape = array<i64: 2, 9>} : (tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<2x9xi32, #cvm.prec<8>>
  %s = cvm.strided_slice %r {begin = array<i64: 0, 1>, end = array<i64: 2, 9>, stride = array<i64: 1, 3>} : (tensor<2x9xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<8>>
  %t = cvm.transpose %s : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  %b = cvm.param "b" dense<[3, -3]> : tensor<2xi32, #cvm.prec<3>>
  %add = cvm.broadcast_add %t, %b : (tensor<3x2xi32, #cvm.prec<8>>, tensor<2xi32, #cvm.prec<3>>) -> tensor<3x2xi32, #cvm.prec<9>>
  func.return %add : tensor<3x2xi32, #cvm.prec<9>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %r = cvm_sched.view %data {layout = strided<[9, 1]>} : tensor<1x2x3x3xi32, #cvm.prec<8>> -> tensor<2x9xi32, #cvm.prec<8>>
// CHECK-NEXT:    %s = cvm_sched.view %data {layout = strided<[9, 3], offset: 1>} : tensor<1x2x3x3xi32, #cvm.prec<8>> -> tensor<2x3xi32, #cvm.prec<8>>
// CHECK-NEXT:    %t = cvm_sched.view %data {layout = strided<[3, 9], offset: 1>} : tensor<1x2x3x3xi32, #cvm.prec<8>> -> tensor<3x2xi32, #cvm.prec<8>>
// CHECK-NEXT:    %b = cvm.param "b"
// CHECK-NEXT:    %add = cvm.broadcast_add %t, %b :

// -----

// A view of a kernel's output is a view of that output. Flattening a transposed tensor merges dims that strides
// cannot walk as one: it stays an operator (a kernel copies it). A sum over no axis (`exclude` lists them all)
// is the identity, a view (its result keeps the sum's precision); a real sum is a kernel.

func.func @main(%data: tensor<2x3x4xi32, #cvm.prec<8>>) -> (tensor<6x4xi32, #cvm.prec<8>>, tensor<3x2x4xi32, #cvm.prec<9>>, tensor<3xi32, #cvm.prec<12>>) {
  %relu = cvm.relu %data : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<2x3x4xi32, #cvm.prec<8>>
  %t = cvm.transpose %relu {axes = array<i64: 1, 0, 2>} : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<3x2x4xi32, #cvm.prec<8>>
  %flat = cvm.reshape %t {shape = array<i64: 6, 4>} : (tensor<3x2x4xi32, #cvm.prec<8>>) -> tensor<6x4xi32, #cvm.prec<8>>
  %same = cvm.sum %t {axis = array<i64: 0, 1, 2>, exclude = true} : (tensor<3x2x4xi32, #cvm.prec<8>>) -> tensor<3x2x4xi32, #cvm.prec<9>>
  %sum = cvm.sum %t {axis = array<i64: 1, 2>} : (tensor<3x2x4xi32, #cvm.prec<8>>) -> tensor<3xi32, #cvm.prec<12>>
  func.return %flat, %same, %sum : tensor<6x4xi32, #cvm.prec<8>>, tensor<3x2x4xi32, #cvm.prec<9>>, tensor<3xi32, #cvm.prec<12>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %relu = cvm.relu %data :
// CHECK-NEXT:    %t = cvm_sched.view %relu {layout = strided<[4, 12, 1]>}
// CHECK-NEXT:    %flat = cvm.reshape %t {shape = array<i64: 6, 4>} :
// CHECK-NEXT:    %same = cvm_sched.view %relu {layout = strided<[4, 12, 1]>} : tensor<2x3x4xi32, #cvm.prec<8>> -> tensor<3x2x4xi32, #cvm.prec<9>>
// CHECK-NEXT:    %sum = cvm.sum %t {axis = array<i64: 1, 2>} :

// -----

// A negative-stride slice is no view: it stays an operator.

func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>> {
  %rev = cvm.strided_slice %data {begin = array<i64: 3>, end = array<i64: -5>, stride = array<i64: -1>} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return %rev : tensor<4xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %rev = cvm.strided_slice %data
