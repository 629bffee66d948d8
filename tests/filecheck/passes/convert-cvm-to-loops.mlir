// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2,no-mmk\"}" --split-input-file | filecheck %s
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2,no-mmk\"}" --split-input-file | filecheck %s
// (target flag no-mmk: the convolutions below without the blocked micro-kernel, which convert-cvm-to-loops-mmk.mlir checks.)

// An elementwise chain (add -> shift -> relu) is one kernel over the collapsed index space: one loop, no
// temporary buffer; the shift's rounding and clip and the relu run on the sum before the only store.

func.func @main(%data: tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<2x3x4xi32, #cvm.prec<4>> {
  %p = cvm.param "p" dense<5> : tensor<2x3x4xi32, #cvm.prec<4>>
  %add = cvm.elemwise_add %data, %p : (tensor<2x3x4xi32, #cvm.prec<8>>, tensor<2x3x4xi32, #cvm.prec<4>>) -> tensor<2x3x4xi32, #cvm.prec<9>>
  %shift = cvm.cvm_right_shift %add {precision = 4 : i64, shift_bit = 3 : i64} : (tensor<2x3x4xi32, #cvm.prec<9>>) -> tensor<2x3x4xi32, #cvm.prec<4>>
  %relu = cvm.relu %shift : (tensor<2x3x4xi32, #cvm.prec<4>>) -> tensor<2x3x4xi32, #cvm.prec<4>>
  func.return %relu : tensor<2x3x4xi32, #cvm.prec<4>>
}

// CHECK:       "memref.global"() <{sym_name = "param_1_p", type = memref<2x3x4xi32>, initial_value = dense<5> : tensor<2x3x4xi32>, sym_visibility = "private", constant}>
// CHECK-LABEL: func.func @elemwise_add_cvm_right_shift_relu(%0: memref<24xi32>, %1: memref<24xi32>, %2: memref<24xi32>) {
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:      %[[A:.*]] = memref.load %1[%[[I]]] : memref<24xi32>
// CHECK-NEXT:      %[[B:.*]] = memref.load %2[%[[I]]] : memref<24xi32>
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:      %[[T:.*]] = arith.shrsi %[[SUM]], %{{.*}} : i32
// CHECK-NEXT:      %[[R:.*]] = arith.addi %[[T]], %{{.*}} : i32
// CHECK-NEXT:      %[[H:.*]] = arith.shrsi %[[R]], %{{.*}} : i32
// CHECK-NEXT:      %[[LO:.*]] = arith.maxsi %[[H]], %{{.*}} : i32
// CHECK-NEXT:      %[[HI:.*]] = arith.minsi %[[LO]], %{{.*}} : i32
// CHECK-NEXT:      %[[RELU:.*]] = arith.maxsi %[[HI]], %{{.*}} : i32
// CHECK-NEXT:      memref.store %[[RELU]], %0[%[[I]]] : memref<24xi32>
// CHECK-NEXT:      scf.reduce
// CHECK-LABEL: func.func @main(%data: memref<2x3x4xi32>, %arena: memref<128xi8>) -> memref<2x3x4xi32>
// CHECK-NEXT:    %p = memref.get_global @param_1_p : memref<2x3x4xi32>
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[BUF:.*]] = memref.view %arena[%[[C0]]][] : memref<128xi8> to memref<24xi32>
// CHECK-NEXT:    %[[OUT:.*]] = memref.reinterpret_cast %data to offset: [0], sizes: [24], strides: [1]
// CHECK:         cvm_sched.call @elemwise_add_cvm_right_shift_relu(%[[BUF]], %[[OUT]], %{{.*}})
// CHECK:         func.return %{{.*}} : memref<2x3x4xi32>

// -----

// Views make no kernel: the reshape, the strided slice and the transpose of the input are one strided layout
// that the broadcast_add kernel reads, and the bias is read with stride 0 along the broadcast dim.

func.func @main(%data: tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<9>> {
  %r = cvm.reshape %data {shape = array<i64: 2, 9>} : (tensor<1x2x3x3xi32, #cvm.prec<8>>) -> tensor<2x9xi32, #cvm.prec<8>>
  %s = cvm.strided_slice %r {begin = array<i64: 0, 1>, end = array<i64: 2, 9>, stride = array<i64: 1, 3>} : (tensor<2x9xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<8>>
  %t = cvm.transpose %s : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  %b = cvm.param "b" dense<[3, -3]> : tensor<2xi32, #cvm.prec<3>>
  %add = cvm.broadcast_add %t, %b : (tensor<3x2xi32, #cvm.prec<8>>, tensor<2xi32, #cvm.prec<3>>) -> tensor<3x2xi32, #cvm.prec<9>>
  func.return %add : tensor<3x2xi32, #cvm.prec<9>>
}

// No kernel of a view, before or after the broadcast_add's (a NOT before the first label of a case checks from
// the end of the previous case's matches).
// CHECK-NOT:   func.func @{{[a-z_]*(reshape|strided_slice|transpose)}}
// CHECK-LABEL: func.func @broadcast_add(%0: memref<3x2xi32>, %1: memref<3x2xi32, strided<[3, 9], offset: 1>>, %2: memref<3x2xi32, strided<[0, 1]>>) {
// CHECK-NOT:   func.func @{{[a-z_]*(reshape|strided_slice|transpose)}}
// CHECK-LABEL: func.func @main(%data: memref<1x2x3x3xi32>, %arena: memref<64xi8>) -> memref<3x2xi32>
// CHECK:         %[[IN:.*]] = memref.reinterpret_cast %data to offset: [1], sizes: [3, 2], strides: [3, 9] : memref<1x2x3x3xi32> to memref<3x2xi32, strided<[3, 9], offset: 1>>
// CHECK-NEXT:    %[[B:.*]] = memref.reinterpret_cast %b to offset: [0], sizes: [3, 2], strides: [0, 1] : memref<2xi32> to memref<3x2xi32, strided<[0, 1]>>
// CHECK-NEXT:    cvm_sched.call @broadcast_add(%{{.*}}, %[[IN]], %[[B]])

// -----

// A conv2d with its requantization epilogue is one kernel: a pack kernel first writes the input as zero-padded
// NHWC int16 (the values fit 8 bits), the weight is packed when compiling (rows of (kh, kw, c), zero-padded to
// 32), then per output row an im2col buffer is gathered and each output is an int16 dot product widened to
// int32, shifted, clipped and stored once. The three convolutions share one kernel, and the arena holds one
// packed input and one output: each buffer is reused as soon as its last reader has run.

func.func @main(%data: tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<1> : tensor<2x2x3x3xi32, #cvm.prec<8>>
  %c1 = cvm.conv2d %data, %w {channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x4xi32, #cvm.prec<8>>, tensor<2x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<21>>
  %s1 = cvm.cvm_right_shift %c1 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x2x4x4xi32, #cvm.prec<21>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %c2 = cvm.conv2d %s1, %w {channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x4xi32, #cvm.prec<8>>, tensor<2x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<21>>
  %s2 = cvm.cvm_right_shift %c2 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x2x4x4xi32, #cvm.prec<21>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %c3 = cvm.conv2d %s2, %w {channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x4xi32, #cvm.prec<8>>, tensor<2x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<21>>
  %s3 = cvm.cvm_right_shift %c3 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x2x4x4xi32, #cvm.prec<21>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  func.return %s3 : tensor<1x2x4x4xi32, #cvm.prec<8>>
}

// CHECK:       "memref.global"() <{sym_name = "param_3_w_packed", type = memref<2x32xi16>, initial_value = dense<{{\[\[}}1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [1,
// CHECK-LABEL: func.func @pack(%0: memref<1x6x6x2xi16>, %1: memref<1x2x4x4xi32>) {
// CHECK:         arith.trunci %{{.*}} : i32 to i16
// CHECK-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x2x4x4xi32>, %1: memref<1x6x6x2xi16>, %2: memref<2x32xi16>) {
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^bb0(%[[OH:.*]]: index):
// CHECK-NEXT:      %[[COLS:.*]] = memref.alloca() : memref<1x4x32xi16>
// CHECK:             %[[V:.*]] = memref.load %1[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x6x6x2xi16>
// CHECK:             memref.store %[[V]], %[[COLS]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x4x32xi16>
// CHECK:           %[[DOT:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (i32) {
// CHECK-NEXT:        %[[A:.*]] = memref.load %[[COLS]][%{{.*}}, %{{.*}}, %[[K]]] : memref<1x4x32xi16>
// CHECK-NEXT:        %[[A32:.*]] = arith.extsi %[[A]] : i16 to i32
// CHECK-NEXT:        %[[W:.*]] = memref.load %2[%{{.*}}, %[[K]]] : memref<2x32xi16>
// CHECK-NEXT:        %[[W32:.*]] = arith.extsi %[[W]] : i16 to i32
// CHECK-NEXT:        %[[P:.*]] = arith.muli %[[A32]], %[[W32]] : i32
// CHECK-NEXT:        %[[S:.*]] = arith.addi %[[ACC]], %[[P]] : i32
// CHECK-NEXT:        scf.yield %[[S]] : i32
// CHECK-NEXT:      }
// CHECK-NEXT:      arith.shrsi %[[DOT]]
// CHECK:           memref.store %{{.*}}, %0[%{{.*}}, %{{.*}}, %[[OH]], %{{.*}}] : memref<1x2x4x4xi32>
// CHECK-NOT:   func.func @conv2d_cvm_right_shift_1(
// CHECK-LABEL: func.func @main(%data: memref<1x2x4x4xi32>, %arena: memref<320xi8>)
// CHECK:         cvm_sched.call @pack(
// CHECK-NEXT:    memref.reinterpret_cast
// CHECK-NEXT:    cvm_sched.call @conv2d_cvm_right_shift(
// CHECK-NEXT:    memref.reinterpret_cast
// CHECK-NEXT:    cvm_sched.call @pack(
// CHECK-NEXT:    memref.reinterpret_cast
// CHECK-NEXT:    cvm_sched.call @conv2d_cvm_right_shift(
// CHECK-NEXT:    memref.reinterpret_cast
// CHECK-NEXT:    cvm_sched.call @pack(
// CHECK-NEXT:    memref.reinterpret_cast
// CHECK-NEXT:    cvm_sched.call @conv2d_cvm_right_shift(
