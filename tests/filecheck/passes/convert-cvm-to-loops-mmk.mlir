// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2\"}" | filecheck %s
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2,no-mmk\"}" | filecheck %s --check-prefix=OFF

// An int16 conv2d (one group, a param weight) takes the register-blocked micro-kernel: the weight is packed when
// compiling in blocks of 16 output channels, (blocks, pairs of taps, 16 lanes x 2): 3 x 3 x 2 = 18 taps are 9
// pairs, the 3 channels fill one block. The input's channels are even (2), so the kernel reads the padded NHWC
// input in place, 3 x 3 taps of 2 channels (stride_h: a padded row of 7 pixels x 2), a pixel every 2 elements:
// per output row, 4 pixels at a time, then the fifth alone, into a (16 lanes x 5 pixels) accumulator buffer,
// from which the bias and the requantization run for the 3 live channels over the row's 5 pixels.

func.func @main(%data: tensor<1x2x4x5xi32, #cvm.prec<8>>) -> tensor<1x3x4x5xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<1> : tensor<3x2x3x3xi32, #cvm.prec<8>>
  %b = cvm.param "b" dense<2> : tensor<3xi32, #cvm.prec<8>>
  %c = cvm.conv2d %data, %w, %b {channels = 3 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = true} : (tensor<1x2x4x5xi32, #cvm.prec<8>>, tensor<3x2x3x3xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<8>>) -> tensor<1x3x4x5xi32, #cvm.prec<22>>
  %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x3x4x5xi32, #cvm.prec<22>>) -> tensor<1x3x4x5xi32, #cvm.prec<8>>
  func.return %s : tensor<1x3x4x5xi32, #cvm.prec<8>>
}

// The first pair of taps: 3 channels x 2 ones, 13 lanes of zeros.
// CHECK:       builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx2", mmk = true, emulated = false, vector_bytes = 32>}
// OFF:         builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx2", mmk = false, emulated = false, vector_bytes = 32>}
// CHECK:       "memref.global"() <{sym_name = "param_4_w_packed", type = memref<1x9x32xi16>, initial_value = dense<"0x0100010001000100010001000000000000000000
// CHECK-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x3x4x5xi32>, %1: memref<1x6x7x2xi16>, %2: memref<1x9x32xi16>, %3: memref<3xi32>) {
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^bb0(%[[OH:.*]]: index):
// CHECK-NEXT:      %[[ACC:.*]] = memref.alloca() : memref<16x5xi32>
// CHECK-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        "cvmc.mmk_i16"(%1, %{{.*}}, %[[OH]], %[[J]], %{{.*}}, %2, %{{.*}}, %{{.*}}, %{{.*}}, %[[ACC]], %{{.*}}, %[[J]]) <{depth = 2 : i64, split = 5 : i64, acc_split = 9 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 2 : i64, kh = 3 : i64, stride_h = 14 : i64, kw = 3 : i64, stride_w = 2 : i64}>
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        "cvmc.mmk_i16"(%1, %{{.*}}, %[[OH]], %[[T]], %{{.*}}, %2, %{{.*}}, %{{.*}}, %{{.*}}, %[[ACC]], %{{.*}}, %[[T]]) <{{{.*}} rows = 1 : i64,
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.for %[[O:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[BIAS:.*]] = memref.load %3[%[[O]]] : memref<3xi32>
// CHECK-NEXT:        scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          %[[V:.*]] = memref.load %[[ACC]][%[[O]], %[[P]]] : memref<16x5xi32>
// CHECK-NEXT:          arith.addi %[[V]], %[[BIAS]] : i32
// CHECK:               memref.store %{{.*}}, %0[%{{.*}}, %[[O]], %[[OH]], %[[P]]] : memref<1x3x4x5xi32>

// OFF-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x3x4x5xi32>, %1: memref<1x6x7x2xi16>, %2: memref<3x32xi16>, %3: memref<3xi32>) {
// OFF-NOT:   cvmc.mmk_i16
