// RUN: cvm-opt %s -p cvm-fuse --split-input-file --verify-diagnostics | filecheck %s
// RUN: cvm-opt %s -p cvm-mark-views,cvm-fuse --split-input-file --verify-diagnostics | filecheck %s --check-prefix=VIEWS

// A conv2d and its requantization (shift, then relu) are one group: one kernel call, the shifted and clipped
// value stored once. The pool reads the group's output: a group of its own. The flatten is a view: no group.
// The dense fuses its shift. Groups are numbered in execution order.

func.func @main(%data: tensor<1x3x8x8xi32, #cvm.prec<8>>) -> tensor<1x10xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<1> : tensor<4x3x3x3xi32, #cvm.prec<8>>
  %c = cvm.conv2d %data, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<21>>
  %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 5 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<21>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %r = cvm.relu %s : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %p = cvm.max_pool2d %r {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x4x4xi32, #cvm.prec<8>>
  %f = cvm.flatten %p : (tensor<1x4x4x4xi32, #cvm.prec<8>>) -> tensor<1x64xi32, #cvm.prec<8>>
  %v = cvm.param "v" dense<1> : tensor<10x64xi32, #cvm.prec<8>>
  %d = cvm.dense %f, %v {units = 10 : i64, use_bias = false} : (tensor<1x64xi32, #cvm.prec<8>>, tensor<10x64xi32, #cvm.prec<8>>) -> tensor<1x10xi32, #cvm.prec<23>>
  %y = cvm.cvm_right_shift %d {precision = 8 : i64, shift_bit = 14 : i64} : (tensor<1x10xi32, #cvm.prec<23>>) -> tensor<1x10xi32, #cvm.prec<8>>
  func.return %y : tensor<1x10xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK:         %c = cvm.conv2d %data, %w {cvm.group = 0 : i64, channels = 4 : i64
// CHECK-NEXT:    %s = cvm.cvm_right_shift %c {cvm.group = 0 : i64, precision = 8 : i64
// CHECK-NEXT:    %r = cvm.relu %s {cvm.group = 0 : i64} :
// CHECK-NEXT:    %p = cvm.max_pool2d %r {cvm.group = 1 : i64, pool_size
// CHECK-NEXT:    %f = cvm.flatten %p :
// CHECK-NEXT:    %v = cvm.param
// CHECK-NEXT:    %d = cvm.dense %f, %v {cvm.group = 2 : i64, units = 10 : i64
// CHECK-NEXT:    %y = cvm.cvm_right_shift %d {cvm.group = 2 : i64, precision = 8 : i64

// VIEWS:         %f = cvm_sched.view %p {layout = strided<[64, 1]>} :

// -----

// Fusion keeps every value another op reads: an output with two consumers, or a head, is stored, and its
// consumers start groups of their own. An elementwise op with two fusable inputs joins the later group: %add
// joins %e's group and reads %c as a second input.

func.func @main(%data: tensor<4x4xi32, #cvm.prec<8>>) -> (tensor<4x4xi32, #cvm.prec<8>>, tensor<4x4xi32, #cvm.prec<10>>, tensor<4xi32, #cvm.prec<11>>) {
  %a = cvm.relu %data : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<8>>
  %b = cvm.negative %a : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<8>>
  %c = cvm.abs %a : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<8>>
  %e = cvm.negative %data : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<8>>
  %add = cvm.elemwise_add %c, %e : (tensor<4x4xi32, #cvm.prec<8>>, tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<9>>
  %add2 = cvm.elemwise_add %add, %b : (tensor<4x4xi32, #cvm.prec<9>>, tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<10>>
  %sum = cvm.sum %b {axis = array<i64: 1>} : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<11>>
  %head = cvm.relu %sum : (tensor<4xi32, #cvm.prec<11>>) -> tensor<4xi32, #cvm.prec<11>>
  func.return %a, %add2, %head : tensor<4x4xi32, #cvm.prec<8>>, tensor<4x4xi32, #cvm.prec<10>>, tensor<4xi32, #cvm.prec<11>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %a = cvm.relu %data {cvm.group = 0 : i64}
// CHECK-NEXT:    %b = cvm.negative %a {cvm.group = 1 : i64}
// CHECK-NEXT:    %c = cvm.abs %a {cvm.group = 2 : i64}
// CHECK-NEXT:    %e = cvm.negative %data {cvm.group = 3 : i64}
// CHECK-NEXT:    %add = cvm.elemwise_add %c, %e {cvm.group = 3 : i64}
// CHECK-NEXT:    %add2 = cvm.elemwise_add %add, %b {cvm.group = 3 : i64}
// CHECK-NEXT:    %sum = cvm.sum %b {cvm.group = 4 : i64, axis = array<i64: 1>}
// CHECK-NEXT:    %head = cvm.relu %sum {cvm.group = 4 : i64}

// -----

// A group runs where its last member is: %x1's group runs at %y, after %x2's, so it is group 1.

func.func @main(%data: tensor<8xi32, #cvm.prec<8>>) -> (tensor<8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<8>>) {
  %x1 = cvm.negative %data : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  %x2 = cvm.abs %data : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  %y = cvm.relu %x1 : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  func.return %y, %x2 : tensor<8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %x1 = cvm.negative %data {cvm.group = 1 : i64}
// CHECK-NEXT:    %x2 = cvm.abs %data {cvm.group = 0 : i64}
// CHECK-NEXT:    %y = cvm.relu %x1 {cvm.group = 1 : i64}

// -----

// Recorded groups are followed (here: the relu kept out of the conv's group) and numbered afresh; an op without
// a number is grouped as the pass would (the last shift joins the relu's group).

func.func @main(%data: tensor<1x1x4x4xi32, #cvm.prec<8>>) -> tensor<1x1x4x4xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<1> : tensor<1x1x1x1xi32, #cvm.prec<8>>
  %c = cvm.conv2d %data, %w {channels = 1 : i64, kernel_size = array<i64: 1, 1>, use_bias = false, cvm.group = 7 : i64} : (tensor<1x1x4x4xi32, #cvm.prec<8>>, tensor<1x1x1x1xi32, #cvm.prec<8>>) -> tensor<1x1x4x4xi32, #cvm.prec<17>>
  %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 8 : i64, cvm.group = 7 : i64} : (tensor<1x1x4x4xi32, #cvm.prec<17>>) -> tensor<1x1x4x4xi32, #cvm.prec<8>>
  %r = cvm.relu %s {cvm.group = 9 : i64} : (tensor<1x1x4x4xi32, #cvm.prec<8>>) -> tensor<1x1x4x4xi32, #cvm.prec<8>>
  %t = cvm.cvm_right_shift %r {precision = 8 : i64, shift_bit = 1 : i64} : (tensor<1x1x4x4xi32, #cvm.prec<8>>) -> tensor<1x1x4x4xi32, #cvm.prec<8>>
  func.return %t : tensor<1x1x4x4xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK:         %c = cvm.conv2d %data, %w {cvm.group = 0 : i64,
// CHECK-NEXT:    %s = cvm.cvm_right_shift %c {cvm.group = 0 : i64,
// CHECK-NEXT:    %r = cvm.relu %s {cvm.group = 1 : i64}
// CHECK-NEXT:    %t = cvm.cvm_right_shift %r {cvm.group = 1 : i64,

// -----

// A recorded group that is no legal fusion is rejected: %b's input has another consumer.

func.func @main(%data: tensor<8xi32, #cvm.prec<8>>) -> (tensor<8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<8>>) {
  %a = cvm.negative %data {cvm.group = 0 : i64} : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  %b = cvm.relu %a {cvm.group = 0 : i64} : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  %c = cvm.abs %a {cvm.group = 1 : i64} : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  func.return %b, %c : tensor<8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<8>>
}

// CHECK: cvm.relu %b: cannot join group 0: the group's output has other consumers

// -----

// Only kernels are grouped: a view with a number is rejected.

func.func @main(%data: tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>> {
  %t = cvm.transpose %data {cvm.group = 0 : i64} : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  func.return %t : tensor<3x2xi32, #cvm.prec<8>>
}

// CHECK: cvm.transpose %t: expected no group for a view, got group 0
