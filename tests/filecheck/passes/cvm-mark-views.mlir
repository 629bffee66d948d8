// RUN: cvm-opt %s -p cvm-mark-views --split-input-file --verify-diagnostics | filecheck %s

// A reshape, a positive-stride slice and a transpose of the input are views of its buffer: each gets its layout
// over that buffer (elements), composed along the chain. The add that reads them is a kernel: no mark.

func.func @main(%data: tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<9>> {
  %r = cvm.reshape %data {shape = array<i64: 2, 9>} : (tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<2x9xi32, #cvm.prec<8>>
  %s = cvm.strided_slice %r {begin = array<i64: 0, 1>, end = array<i64: 2, 9>, stride = array<i64: 1, 3>} : (tensor<2x9xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<8>>
  %t = cvm.transpose %s : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  %b = cvm.param "b" dense<[3, -3]> : tensor<2xi32, #cvm.prec<3>>
  %add = cvm.broadcast_add %t, %b : (tensor<3x2xi32, #cvm.prec<8>>, tensor<2xi32, #cvm.prec<3>>) -> tensor<3x2xi32, #cvm.prec<9>>
  func.return %add : tensor<3x2xi32, #cvm.prec<9>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %r = cvm.reshape %data {cvm.view = strided<[9, 1]>, shape = array<i64: 2, 9>}
// CHECK-NEXT:    %s = cvm.strided_slice %r {cvm.view = strided<[9, 3], offset: 1>, begin = array<i64: 0, 1>, end = array<i64: 2, 9>, stride = array<i64: 1, 3>}
// CHECK-NEXT:    %t = cvm.transpose %s {cvm.view = strided<[3, 9], offset: 1>}
// CHECK-NEXT:    %b = cvm.param "b"
// CHECK-NEXT:    %add = cvm.broadcast_add %t, %b :

// -----

// A view of a kernel's output is a layout over that kernel's buffer. Flattening a transposed tensor merges dims
// that strides cannot walk as one: no view (a kernel copies it). A sum over no axis (`exclude` lists them all)
// is the identity, a view; a real sum is a kernel.

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
// CHECK-NEXT:    %t = cvm.transpose %relu {cvm.view = strided<[4, 12, 1]>, axes = array<i64: 1, 0, 2>}
// CHECK-NEXT:    %flat = cvm.reshape %t {shape = array<i64: 6, 4>} :
// CHECK-NEXT:    %same = cvm.sum %t {cvm.view = strided<[4, 12, 1]>, axis = array<i64: 0, 1, 2>, exclude = true}
// CHECK-NEXT:    %sum = cvm.sum %t {axis = array<i64: 1, 2>} :

// -----

// An op no head depends on is never lowered: no mark.

func.func @main(%data: tensor<2x3xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<8>> {
  %dead = cvm.transpose %data : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  func.return %data : tensor<2x3xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %dead = cvm.transpose %data :

// -----

// Marking again keeps a recorded layout that is the op's own, and rejects one that is not.

func.func @main(%data: tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>> {
  %t = cvm.transpose %data {cvm.view = strided<[1, 2]>} : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  func.return %t : tensor<3x2xi32, #cvm.prec<8>>
}

// CHECK: cvm.transpose %t: expected the view 'strided<[1, 3]>', got the view 'strided<[1, 2]>'

// -----

func.func @main(%data: tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<6x4xi32, #cvm.prec<8>> {
  %t = cvm.transpose %data {axes = array<i64: 1, 0, 2>} : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<3x2x4xi32, #cvm.prec<8>>
  %flat = cvm.reshape %t {shape = array<i64: 6, 4>, cvm.view = strided<[4, 1]>} : (tensor<3x2x4xi32, #cvm.prec<8>>) -> tensor<6x4xi32, #cvm.prec<8>>
  func.return %flat : tensor<6x4xi32, #cvm.prec<8>>
}

// CHECK: cvm.reshape %flat: expected no view (reshape needs a kernel here), got the view 'strided<[4, 1]>'
