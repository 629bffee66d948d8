// RUN: cvm-opt %s -p cvm-to-gpu-loops --split-input-file | filecheck %s

// The GPU schedule of a conv2d whose operands fit int8 (loops.gpu): the input is packed as signed bytes in
// zero-padded NHWC, one thread per element; the weight as rows of (kh, kw, c) bytes padded to whole words (108).
// A thread computes 2 output channels (the largest of 4, 2, 1 dividing 6), so each input word is loaded once for
// two `cvmc.dp4a` (four int8 products each). A unit's reduction of 27 words (8 multiply-adds a word) is too long
// for one thread, so 4 threads share it: a block kernel of 2 blocks of 53 units (the last unit repeated once),
// each thread summing every fourth word (7 steps, the 28th word masked off by a select) into shared memory
// (memory space 3), a barrier, then one thread a unit adding the 4 partial sums of each channel and running the
// requantization epilogue.

func.func @main(%data: tensor<1x12x5x7xi32, #cvm.prec<8>>) -> tensor<1x6x5x7xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<-127> : tensor<6x12x3x3xi32, #cvm.prec<8>>
  %c1 = cvm.conv2d %data, %w {channels = 6 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x12x5x7xi32, #cvm.prec<8>>, tensor<6x12x3x3xi32, #cvm.prec<8>>) -> tensor<1x6x5x7xi32, #cvm.prec<23>>
  %s1 = cvm.cvm_right_shift %c1 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x6x5x7xi32, #cvm.prec<23>>) -> tensor<1x6x5x7xi32, #cvm.prec<8>>
  func.return %s1 : tensor<1x6x5x7xi32, #cvm.prec<8>>
}

// CHECK:       "memref.global"() <{sym_name = "param_3_w_packed", type = memref<6x108xi8>
// CHECK-LABEL: func.func @pack(%0: memref<1x7x9x12xi8>, %1: memref<1x12x5x7xi32>) {
// CHECK:         "scf.parallel"(%{{.*}}) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
// CHECK:           arith.trunci %{{.*}} : i32 to i8
// CHECK-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x6x5x7xi32>, %1: memref<1x7x9x12xi8>, %2: memref<6x108xi8>) {
// CHECK-DAG:     %[[BLOCKS:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[PER:.*]] = arith.constant 53 : index
// CHECK-DAG:     %[[THREADS:.*]] = arith.constant 212 : index
// CHECK-DAG:     %[[STEPS:.*]] = arith.constant 7 : index
// CHECK:         %[[SHARED:.*]] = memref.alloca() : memref<424xi32, 3 : i64>
// CHECK-NEXT:    %[[B:.*]] = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:    %[[G:.*]] = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:    %[[T:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:    %[[BD:.*]] = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:    scf.for %{{.*}} = %[[B]] to %[[BLOCKS]] step %[[G]] {
// CHECK:           scf.for %[[V:.*]] = %[[T]] to %[[THREADS]] step %[[BD]] {
// CHECK:             %[[S0:[^,]*]], %[[S1:[^ ]*]] = scf.for %{{.*}} = %{{.*}} to %[[STEPS]] step %{{.*}} iter_args(%[[A0:[^ ]*]] = %{{[^,]*}}, %[[A1:[^ ]*]] = %{{.*}}) -> (i32, i32) {
// CHECK:               %[[X:.*]] = "cvmc.load_word"(%1, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<1x7x9x12xi8>, index, index, index, index) -> i32
// CHECK:               %[[W0:.*]] = "cvmc.load_word"(%2, %{{.*}}, %{{.*}}) : (memref<6x108xi8>, index, index) -> i32
// CHECK-NEXT:          %[[D0:.*]] = "cvmc.dp4a"(%[[X]], %[[W0]], %[[A0]]) : (i32, i32, i32) -> i32
// CHECK:               %[[W1:.*]] = "cvmc.load_word"(%2, %{{.*}}, %{{.*}}) : (memref<6x108xi8>, index, index) -> i32
// CHECK-NEXT:          %[[D1:.*]] = "cvmc.dp4a"(%[[X]], %[[W1]], %[[A1]]) : (i32, i32, i32) -> i32
// CHECK-NEXT:          %[[M0:.*]] = arith.select %{{.*}}, %[[D0]], %[[A0]] : i32
// CHECK-NEXT:          %[[M1:.*]] = arith.select %{{.*}}, %[[D1]], %[[A1]] : i32
// CHECK-NEXT:          scf.yield %[[M0]], %[[M1]] : i32, i32
// CHECK:             memref.store %[[S0]], %[[SHARED]][%[[V]]] : memref<424xi32, 3 : i64>
// CHECK:             memref.store %[[S1]], %[[SHARED]][%{{.*}}] : memref<424xi32, 3 : i64>
// CHECK:           "gpu.barrier"() : () -> ()
// CHECK-NEXT:      scf.for %{{.*}} = %[[T]] to %[[PER]] step %[[BD]] {
// CHECK:             scf.if
// CHECK:               memref.load %[[SHARED]]
// CHECK:               arith.shrsi
// CHECK:               memref.store %{{.*}}, %0[
// CHECK:               memref.store %{{.*}}, %0[
// CHECK:           "gpu.barrier"() : () -> ()

// -----

// A dense of int8 operands with a short reduction (12 -> 3 words, 12 multiply-adds an output): one thread per
// output (3 units: no tile), an scf.parallel over the output the printer deals to the grid.

func.func @main(%data: tensor<2x12xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<20>> {
  %w = cvm.param "w" dense<5> : tensor<3x12xi32, #cvm.prec<8>>
  %y = cvm.dense %data, %w {units = 3 : i64, use_bias = false} : (tensor<2x12xi32, #cvm.prec<8>>, tensor<3x12xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<20>>
  func.return %y : tensor<2x3xi32, #cvm.prec<20>>
}

// CHECK:       "memref.global"() <{sym_name = "param_{{[0-9]+}}_w_packed", type = memref<3x12xi8>
// CHECK-LABEL: func.func @pack(%0: memref<2x12xi8>, %1: memref<2x12xi32>) {
// CHECK-LABEL: func.func @dense(%0: memref<2x3xi32>, %1: memref<2x12xi8>, %2: memref<3x12xi8>) {
// CHECK-NOT:     gpu.
// CHECK:         "scf.parallel"(%{{.*}}) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
// CHECK:           scf.for
// CHECK:             "cvmc.load_word"(%1,
// CHECK:             "cvmc.load_word"(%2,
// CHECK:             "cvmc.dp4a"
// CHECK:           memref.store %{{.*}}, %0[
