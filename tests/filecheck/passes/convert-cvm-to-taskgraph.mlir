// RUN: cvm-opt %s -p convert-cvm-to-taskgraph --split-input-file --verify-diagnostics | filecheck %s

// A small CNN as the original converter built LeNet: conv (pad 1) -> rounding shift by 4 -> relu -> 2x2 pool is
// CC2D -> SI -> one CCMPB (CMP 0, BIT_SHIGT_NUM 4, INT_8 clips at 127); the shift's rounding offset 2^3 joins the
// conv's bias ([5, -7] + 8); flatten is a RESHAPE edge (c-major order of the (y, x, f) box); the dense without
// bias takes its offset as CONSTANT_B.

func.func @main(%data: tensor<1x1x4x4xi32, #cvm.prec<8>>) -> tensor<1x3xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<[[[[1, -2, 3], [0, 1, 0], [-1, 2, 1]]], [[[2, 0, -1], [1, 1, 1], [0, -3, 2]]]]> : tensor<2x1x3x3xi32, #cvm.prec<3>>
  %b = cvm.param "b" dense<[5, -7]> : tensor<2xi32, #cvm.prec<4>>
  %conv = cvm.conv2d %data, %w, %b {name = "conv", channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<1x1x4x4xi32, #cvm.prec<8>>, tensor<2x1x3x3xi32, #cvm.prec<3>>, tensor<2xi32, #cvm.prec<4>>) -> tensor<1x2x4x4xi32, #cvm.prec<16>>
  %rq = cvm.cvm_right_shift %conv {precision = 8 : i64, shift_bit = 4 : i64} : (tensor<1x2x4x4xi32, #cvm.prec<16>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %relu = cvm.relu %rq : (tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %pool = cvm.max_pool2d %relu {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2x2x2xi32, #cvm.prec<8>>
  %flat = cvm.flatten %pool : (tensor<1x2x2x2xi32, #cvm.prec<8>>) -> tensor<1x8xi32, #cvm.prec<8>>
  %fw = cvm.param "fw" dense<[[-3, -2, -1, 0, 1, 2, 3, -3], [-2, -1, 0, 1, 2, 3, -3, -2], [-1, 0, 1, 2, 3, -3, -2, -1]]> : tensor<3x8xi32, #cvm.prec<3>>
  %fc = cvm.dense %flat, %fw {units = 3 : i64, use_bias = false} : (tensor<1x8xi32, #cvm.prec<8>>, tensor<3x8xi32, #cvm.prec<3>>) -> tensor<1x3xi32, #cvm.prec<15>>
  %rq2 = cvm.cvm_right_shift %fc {precision = 8 : i64, shift_bit = 3 : i64} : (tensor<1x3xi32, #cvm.prec<15>>) -> tensor<1x3xi32, #cvm.prec<8>>
  func.return %rq2 : tensor<1x3xi32, #cvm.prec<8>>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   taskgraph.graph {
// CHECK-NEXT:     taskgraph.input 0 INT_8 <y = 4, x = 4, f = 1> out {{\[\[}}0]]
// CHECK-NEXT:     taskgraph.sic2d 1 INT_8 <y = 4, x = 4, r = 1> in {{\[\[}}0]] out {{\[\[}}1]]
// CHECK-NEXT:     taskgraph.sw2d 2 INT_8 <f = 2, r = 1, ky = 3, kx = 3> out {{\[\[}}2]] data <INT_8 dense<{{.*}}> : tensor<2x1x3x3xi8>>
// CHECK-NEXT:     taskgraph.sb 3 INT_32 <f = 2> out {{\[\[}}3]] data <INT_32 dense<[13, 1]> : tensor<2xi32>>
// CHECK-NEXT:     taskgraph.cc2d 4 INT_32 <y = 4, x = 4, f = 2, r = 1, ky = 3, kx = 3, iy = 4, ix = 4> in {{\[\[}}1], [2], [3]] out {{\[\[}}4]] attrs [DILATION_X = 1 : INT_32, DILATION_Y = 1 : INT_32, KERNEL_X = 3 : INT_32, KERNEL_Y = 3 : INT_32, PAD_UP = 1 : INT_32, PAD_DOWN = 1 : INT_32, PAD_LEFT = 1 : INT_32, PAD_RIGHT = 1 : INT_32, STRIDE_X = 1 : INT_32, STRIDE_Y = 1 : INT_32] bias VECTOR
// CHECK-NEXT:     taskgraph.si 5 INT_32 <y = 4, x = 4, f = 2> in {{\[\[}}4]] out {{\[\[}}5]]
// CHECK-NEXT:     taskgraph.ccmpb 6 INT_8 <y = 2, x = 2, f = 2, ky = 2, kx = 2, iy = 4, ix = 4> in {{\[\[}}5]] out {{\[\[}}6]] attrs [CMP = 0 : INT_32, KERNEL_X = 2 : INT_32, KERNEL_Y = 2 : INT_32, PAD_UP = 0 : INT_32, PAD_DOWN = 0 : INT_32, PAD_LEFT = 0 : INT_32, PAD_RIGHT = 0 : INT_32, STRIDE_X = 2 : INT_32, STRIDE_Y = 2 : INT_32, BIT_SHIGT_NUM = 4 : INT_32]
// CHECK-NEXT:     taskgraph.sifc 7 INT_8 <r = 8> in {{\[\[}}6]] out {{\[\[}}7]]
// CHECK-NEXT:     taskgraph.swfc 8 INT_8 <f = 3, r = 8> out {{\[\[}}8]] data <INT_8 dense<{{.*}}> : tensor<3x8xi8>>
// CHECK-NEXT:     taskgraph.cvm 9 INT_32 <f = 3, r = 8> in {{\[\[}}7], [8]] out {{\[\[}}9]] attrs [CONSTANT_B = 4 : INT_32] bias CONSTANT
// CHECK-NEXT:     taskgraph.si 10 INT_32 <f = 3> in {{\[\[}}9]] out {{\[\[}}10]]
// CHECK-NEXT:     taskgraph.ccmpb 11 INT_8 <f = 3, ky = 1, kx = 1> in {{\[\[}}10]] out {{\[\[}}11]] attrs [CMP = -127 : INT_32, KERNEL_X = 1 : INT_32, KERNEL_Y = 1 : INT_32, STRIDE_X = 1 : INT_32, STRIDE_Y = 1 : INT_32, BIT_SHIGT_NUM = 3 : INT_32]
// CHECK-NEXT:     taskgraph.si 12 INT_8 <f = 3> in {{\[\[}}11]] out {{\[\[}}12]]
// CHECK-NEXT:     taskgraph.output 13 INT_8 <f = 3> in {{\[\[}}12]]
// CHECK-NEXT:     taskgraph.edge 0 from 0 to 1
// CHECK:          taskgraph.edge 6 from 6 to 7 [RESHAPE [<INT_32 dense<[1, 0, 2]> : tensor<3xi32>>]]
// CHECK:          taskgraph.edge 12 from 12 to 13
// CHECK-NEXT:     taskgraph.group 0 [1, 2, 3, 4]
// CHECK-NEXT:     taskgraph.group 1 [5, 6]
// CHECK-NEXT:     taskgraph.group 2 [7, 8, 9]
// CHECK-NEXT:     taskgraph.group 3 [10, 11]
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// A padded max_pool2d over values that may be negative: the CCMPB would pad with 0, so the pool reads an SI whose
// border holds INT32_MIN and whose middle box (position y = 1, x = 1) the input edge writes. A per-channel
// broadcast_add is a CADD with the param as its SB bias; clip(-3, 100) is a CCMPB (CMP -3) and, 100 being no
// precision's largest value, a CCMPS (CMP 100).

func.func @main(%data: tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x2x2xi32, #cvm.prec<8>> {
  %c = cvm.param "c" dense<[[[4]], [[-4]]]> : tensor<2x1x1xi32, #cvm.prec<4>>
  %add = cvm.broadcast_add %data, %c : (tensor<1x2x3x3xi32, #cvm.prec<8>>, tensor<2x1x1xi32, #cvm.prec<4>>) -> tensor<1x2x3x3xi32, #cvm.prec<9>>
  %clip = cvm.clip %add {a_min = -3 : i64, a_max = 100 : i64} : (tensor<1x2x3x3xi32, #cvm.prec<9>>) -> tensor<1x2x3x3xi32, #cvm.prec<8>>
  %pool = cvm.max_pool2d %clip {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x2x2xi32, #cvm.prec<8>>
  func.return %pool : tensor<1x2x2x2xi32, #cvm.prec<8>>
}

// CHECK:      taskgraph.input 0 INT_8 <y = 3, x = 3, f = 2> out {{\[\[}}0]]
// CHECK-NEXT: taskgraph.si 1 INT_8 <y = 3, x = 3, f = 2> in {{\[\[}}0]] out {{\[\[}}1]]
// CHECK-NEXT: taskgraph.sb 2 INT_32 <f = 2> out {{\[\[}}2]] data <INT_32 dense<[4, -4]> : tensor<2xi32>>
// CHECK-NEXT: taskgraph.cadd 3 INT_32 <y = 3, x = 3, f = 2, ky = 1, kx = 1> in {{\[\[}}1], [2]] out {{\[\[}}3]] bias VECTOR
// CHECK-NEXT: taskgraph.si 4 INT_32 <y = 5, x = 5, f = 2> in {{\[\[}}3 at <y = 1, x = 1> size <y = 3, x = 3, f = 2>]] out {{\[\[}}4]] data <INT_32 dense<-2147483648> : tensor<5x5x2xi32>>
// CHECK-NEXT: taskgraph.ccmpb 5 INT_32 <y = 2, x = 2, f = 2, ky = 2, kx = 2, iy = 5, ix = 5> in {{\[\[}}4]] out {{\[\[}}5]] attrs [CMP = -3 : INT_32, KERNEL_X = 2 : INT_32, KERNEL_Y = 2 : INT_32, PAD_UP = 0 : INT_32, PAD_DOWN = 0 : INT_32, PAD_LEFT = 0 : INT_32, PAD_RIGHT = 0 : INT_32, STRIDE_X = 2 : INT_32, STRIDE_Y = 2 : INT_32, BIT_SHIGT_NUM = 0 : INT_32]
// CHECK-NEXT: taskgraph.si 6 INT_32 <y = 2, x = 2, f = 2> in {{\[\[}}5]] out {{\[\[}}6]]
// CHECK-NEXT: taskgraph.ccmps 7 INT_8 <y = 2, x = 2, f = 2, ky = 1, kx = 1, iy = 2, ix = 2> in {{\[\[}}6]] out {{\[\[}}7]] attrs [CMP = 100 : INT_32, {{.*}}, BIT_SHIGT_NUM = 0 : INT_32]
// CHECK-NEXT: taskgraph.si 8 INT_8 <y = 2, x = 2, f = 2> in {{\[\[}}7]] out {{\[\[}}8]]
// CHECK-NEXT: taskgraph.output 9 INT_8 <y = 2, x = 2, f = 2> in {{\[\[}}8]]

// -----

// What no block computes is a pass failure naming the node.

func.func @main(%data: tensor<1x8xi32, #cvm.prec<8>>) -> tensor<2xi32, #cvm.prec<8>> {
  %i = cvm.param "i" dense<[0, 3]> : tensor<2xi32, #cvm.prec<3>>
  %pick = cvm.take %data, %i {name = "pick"} : (tensor<1x8xi32, #cvm.prec<8>>, tensor<2xi32, #cvm.prec<3>>) -> tensor<2xi32, #cvm.prec<8>>
  func.return %pick : tensor<2xi32, #cvm.prec<8>>
}

// CHECK: cannot convert node 'pick' (take) to Task IR: no task block computes it
