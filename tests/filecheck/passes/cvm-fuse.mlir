// RUN: cvm-opt %s -p cvm-mark-views,cvm-fuse --split-input-file | filecheck %s

// A conv2d and its requantization (shift, then relu) are one kernel: one call, the shifted and clipped value
// stored once. The pool reads the kernel's result: a kernel of its own. The flatten is a view: outside. The
// dense fuses its shift. Kernels stand where their last member stood.

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
// CHECK-NEXT:    %w = cvm.param "w"
// CHECK-NEXT:    %r = cvm_sched.kernel(%data, %w)
// CHECK-NEXT:    ^bb0(%0: tensor<1x3x8x8xi32, #cvm.prec<8>>, %1: tensor<4x3x3x3xi32, #cvm.prec<8>>):
// CHECK-NEXT:      %c = cvm.conv2d %0, %1
// CHECK-NEXT:      %s = cvm.cvm_right_shift %c
// CHECK-NEXT:      %r_1 = cvm.relu %s
// CHECK-NEXT:      cvm_sched.yield %r_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %p = cvm_sched.kernel(%r)
// CHECK-NEXT:    ^bb0(%0: tensor<1x4x8x8xi32, #cvm.prec<8>>):
// CHECK-NEXT:      %p_1 = cvm.max_pool2d %0
// CHECK-NEXT:      cvm_sched.yield %p_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %f = cvm_sched.view %p
// CHECK-NEXT:    %v = cvm.param "v"
// CHECK-NEXT:    %y = cvm_sched.kernel(%f, %v)
// CHECK-NEXT:    ^bb0(%0: tensor<1x64xi32, #cvm.prec<8>>, %1: tensor<10x64xi32, #cvm.prec<8>>):
// CHECK-NEXT:      %d = cvm.dense %0, %1
// CHECK-NEXT:      %y_1 = cvm.cvm_right_shift %d
// CHECK-NEXT:      cvm_sched.yield %y_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y

// -----

// Fusion keeps every value another op reads: an output with two consumers, or a head, is stored, and its
// consumers start kernels of their own. An elementwise op with two fusable inputs joins the later kernel: %add
// joins %e's kernel and reads %c as a second input (and %add2 reads %b as a third).

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
// CHECK-NEXT:    %a = cvm_sched.kernel(%data)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %a_1 = cvm.relu
// CHECK-NEXT:      cvm_sched.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %b = cvm_sched.kernel(%a)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %b_1 = cvm.negative
// CHECK-NEXT:      cvm_sched.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = cvm_sched.kernel(%a)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %c_1 = cvm.abs
// CHECK-NEXT:      cvm_sched.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %add2 = cvm_sched.kernel(%data, %c, %b)
// CHECK-NEXT:    ^bb0(%0: tensor<4x4xi32, #cvm.prec<8>>, %1: tensor<4x4xi32, #cvm.prec<8>>, %2: tensor<4x4xi32, #cvm.prec<8>>):
// CHECK-NEXT:      %e = cvm.negative %0
// CHECK-NEXT:      %add = cvm.elemwise_add %1, %e
// CHECK-NEXT:      %add2_1 = cvm.elemwise_add %add, %2
// CHECK-NEXT:      cvm_sched.yield %add2_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %head = cvm_sched.kernel(%b)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %sum = cvm.sum %0
// CHECK-NEXT:      %head_1 = cvm.relu %sum
// CHECK-NEXT:      cvm_sched.yield

// -----

// A kernel stands where its last member stood: %x1's kernel runs at %y, after %x2's.

func.func @main(%data: tensor<8xi32, #cvm.prec<8>>) -> (tensor<8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<8>>) {
  %x1 = cvm.negative %data : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  %x2 = cvm.abs %data : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  %y = cvm.relu %x1 : (tensor<8xi32, #cvm.prec<8>>) -> tensor<8xi32, #cvm.prec<8>>
  func.return %y, %x2 : tensor<8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %x2 = cvm_sched.kernel(%data)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %x2_1 = cvm.abs
// CHECK-NEXT:      cvm_sched.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = cvm_sched.kernel(%data)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %x1 = cvm.negative
// CHECK-NEXT:      %y_1 = cvm.relu %x1
// CHECK-NEXT:      cvm_sched.yield

// -----

// An op no head depends on stays outside every kernel; a reshape that strides cannot express is a kernel (a
// copy) that takes no epilogue.

func.func @main(%data: tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<6x4xi32, #cvm.prec<8>> {
  %dead = cvm.negative %data : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<2x3x4xi32, #cvm.prec<8>>
  %t = cvm.transpose %data {axes = array<i64: 1, 0, 2>} : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<3x2x4xi32, #cvm.prec<8>>
  %flat = cvm.reshape %t {shape = array<i64: 6, 4>} : (tensor<3x2x4xi32, #cvm.prec<8>>) -> tensor<6x4xi32, #cvm.prec<8>>
  %r = cvm.relu %flat : (tensor<6x4xi32, #cvm.prec<8>>) -> tensor<6x4xi32, #cvm.prec<8>>
  func.return %r : tensor<6x4xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %dead = cvm.negative %data
// CHECK-NEXT:    %t = cvm_sched.view %data
// CHECK-NEXT:    %flat = cvm_sched.kernel(%t)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %flat_1 = cvm.reshape %0
// CHECK-NEXT:      cvm_sched.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = cvm_sched.kernel(%flat)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %r_1 = cvm.relu %0
// CHECK-NEXT:      cvm_sched.yield
