// RUN: cvm-opt %s -p "cvm-mark-views,cvm-pack-operands{target=\"x86:avx2\"},cvm-fuse,cvm-fuse-packs{target=\"x86:avx2\"},cvm-bufferize" --split-input-file | filecheck %s

// Three kernels, each an outlined function over memrefs whose body is still its cvm op, between a load of what it
// reads and a store of what it writes; @main becomes the host: views of one byte arena, a call per kernel. %a
// lives until the sum has read it, %c from the tile on: their lifetimes do not overlap, so they share bytes (one
// shift); %b is live with both. Each call carries its work (gas: 6 a relu element); the footprint is every
// operator output's bytes (64 + 16 + 64 int32), what the arena's reuse is measured against.

func.func @main(%data: tensor<4x16xi32, #cvm.prec<8>>) -> tensor<64xi32, #cvm.prec<11>> {
  %a = cvm.relu %data : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.sum %a {axis = array<i64: 0>} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<16xi32, #cvm.prec<11>>
  %c = cvm.tile %b {reps = array<i64: 4>} : (tensor<16xi32, #cvm.prec<11>>) -> tensor<64xi32, #cvm.prec<11>>
  func.return %c : tensor<64xi32, #cvm.prec<11>>
}

// CHECK-LABEL: func.func @relu(%0: memref<64xi32>, %1: memref<64xi32>) {
// CHECK-NEXT:    %2 = cvm_sched.load %1 : memref<64xi32> -> tensor<4x16xi32, #cvm.prec<8>>
// CHECK-NEXT:    %3 = cvm.relu %2 :
// CHECK-NEXT:    cvm_sched.store %3, %0 : tensor<4x16xi32, #cvm.prec<8>>, memref<64xi32>
// CHECK-NEXT:    func.return
// CHECK:       func.func @sum(
// CHECK:         cvm.sum
// CHECK:       func.func @tile(
// CHECK:         cvm.tile
// CHECK-LABEL: func.func @main(%data: memref<4x16xi32>, %arena: memref<{{[0-9]+}}xi8>) -> memref<64xi32>
// CHECK-NEXT:    %0 = arith.constant [[A:[0-9]+]] : index
// CHECK-NEXT:    %1 = memref.view %arena[%0][] : memref<{{[0-9]+}}xi8> to memref<64xi32>
// CHECK-NEXT:    %2 = arith.constant {{[0-9]+}} : index
// CHECK-NEXT:    %3 = memref.view %arena[%2][] : memref<{{[0-9]+}}xi8> to memref<16xi32>
// CHECK-NEXT:    %4 = arith.constant [[A]] : index
// CHECK-NEXT:    %5 = memref.view %arena[%4][]
// CHECK-NEXT:    %6 = memref.reinterpret_cast %data
// CHECK-NEXT:    cvm_sched.call @relu(%1, %6)
// CHECK-NEXT:    %7 = memref.reinterpret_cast %1
// CHECK-NEXT:    cvm_sched.call @sum(%3, %7)
// CHECK-NEXT:    cvm_sched.call @tile(%5, %3) {work = 384 : i64}
// CHECK-NEXT:    cvm_sched.footprint {intermediate_bytes = 576 : i64}
// CHECK-NEXT:    func.return %5 : memref<64xi32>

// -----

// A fused kernel is one function: the conv2d and its epilogue. The conv2d's data is packed by a kernel of its own
// (zero-padded NHWC int16) into the arena, its param weight packed when compiling (a global); the dense packs both
// operands (its weight is an op's output) by kernels just before it. The flatten is a view: a cast, no kernel.

func.func @main(%data: tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<1> : tensor<2x2x3x3xi32, #cvm.prec<8>>
  %c = cvm.conv2d %data, %w {channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x4xi32, #cvm.prec<8>>, tensor<2x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<21>>
  %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x2x4x4xi32, #cvm.prec<21>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %r = cvm.relu %s : (tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %f = cvm.flatten %r : (tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x32xi32, #cvm.prec<8>>
  %u = cvm.param "u" dense<1> : tensor<2x32xi32, #cvm.prec<8>>
  %n = cvm.negative %u : (tensor<2x32xi32, #cvm.prec<8>>) -> tensor<2x32xi32, #cvm.prec<8>>
  %d = cvm.dense %f, %n {units = 2 : i64, use_bias = false} : (tensor<1x32xi32, #cvm.prec<8>>, tensor<2x32xi32, #cvm.prec<8>>) -> tensor<1x2xi32, #cvm.prec<22>>
  %y = cvm.cvm_right_shift %d {precision = 8 : i64, shift_bit = 14 : i64} : (tensor<1x2xi32, #cvm.prec<22>>) -> tensor<1x2xi32, #cvm.prec<8>>
  func.return %y : tensor<1x2xi32, #cvm.prec<8>>
}

// CHECK:       "memref.global"() <{sym_name = "param_{{[0-9]+}}_u"
// CHECK-LABEL: func.func @pack(%0: memref<1x6x6x2xi16>, %1: memref<1x2x4x4xi32>) {
// CHECK-NEXT:    cvm_sched.load %1
// CHECK-NEXT:    cvm_sched.pack %2 {to = "nhwc", padding = array<i64: 1, 1>}
// CHECK-NEXT:    cvm_sched.store %3, %0
// CHECK-LABEL: func.func @conv2d_cvm_right_shift_relu(
// CHECK-NEXT:    %3 = cvm_sched.load %1 : memref<1x6x6x2xi16> -> tensor<1x6x6x2xi16>
// CHECK-NEXT:    %4 = cvm_sched.load %2 : memref<1x9x32xi16> -> tensor<1x9x32xi16>
// CHECK-NEXT:    %5 = cvm.conv2d %3, %4
// CHECK-NEXT:    %6 = cvm.cvm_right_shift %5
// CHECK-NEXT:    %7 = cvm.relu %6
// CHECK-NEXT:    cvm_sched.store %7, %0
// CHECK-LABEL: func.func @negative(
// CHECK-LABEL: func.func @pack_1(
// CHECK:         cvm_sched.pack %2 {to = "rows", width = 32 : i64}
// CHECK-LABEL: func.func @pack_2(
// CHECK-LABEL: func.func @dense_cvm_right_shift(
// CHECK:         cvm.dense
// CHECK-NEXT:    cvm.cvm_right_shift
// CHECK-NEXT:    cvm_sched.store
// CHECK-LABEL: func.func @main(
// CHECK:         %w_packed = memref.get_global @param_{{[0-9]+}}_w_packed : memref<1x9x32xi16>
// CHECK:         cvm_sched.call @pack(
// CHECK-NEXT:    memref.reinterpret_cast
// CHECK-NEXT:    cvm_sched.call @conv2d_cvm_right_shift_relu({{.*}}, %w_packed)
// CHECK:         cvm_sched.call @negative(
// CHECK:         cvm_sched.call @pack_1(
// CHECK:         cvm_sched.call @pack_2(
// CHECK:         cvm_sched.call @dense_cvm_right_shift(
// CHECK-NEXT:    cvm_sched.footprint
// CHECK-NEXT:    func.return

// -----

// An op with two results stores both; non_max_suppression also takes a scratch row (an argument it neither
// loads nor stores).

func.func @main(%data: tensor<1x4x6xi32, #cvm.prec<8>>) -> tensor<1x4x6xi32, #cvm.prec<8>> {
  %count, %boxes = cvm.get_valid_counts %data {score_threshold = 0 : i64} : (tensor<1x4x6xi32, #cvm.prec<8>>) -> (tensor<1xi32, #cvm.prec<6>>, tensor<1x4x6xi32, #cvm.prec<8>>)
  %y = cvm.non_max_suppression %boxes, %count {iou_threshold = 50 : i64} : (tensor<1x4x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<6>>) -> tensor<1x4x6xi32, #cvm.prec<8>>
  func.return %y : tensor<1x4x6xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @get_valid_counts(%0: memref<1xi32>, %1: memref<1x4x6xi32>, %2: memref<1x4x6xi32>) {
// CHECK-NEXT:    %3 = cvm_sched.load %2
// CHECK-NEXT:    %4, %5 = cvm.get_valid_counts %3
// CHECK-NEXT:    cvm_sched.store %4, %0
// CHECK-NEXT:    cvm_sched.store %5, %1
// CHECK-LABEL: func.func @non_max_suppression(%0: memref<1x4x6xi32>, %1: memref<1x4x6xi32>, %2: memref<1xi32>, %3: memref<4xi32>) {
// CHECK-NEXT:    %4 = cvm_sched.load %1
// CHECK-NEXT:    %5 = cvm_sched.load %2
// CHECK-NEXT:    %6 = cvm.non_max_suppression %4, %5
// CHECK-NEXT:    cvm_sched.store %6, %0
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @main(
// CHECK:         cvm_sched.call @get_valid_counts(
// CHECK-NEXT:    memref.reinterpret_cast
// CHECK-NEXT:    cvm_sched.call @non_max_suppression(
