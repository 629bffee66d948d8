// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx512-vnni\"}" --split-input-file | filecheck %s
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx512-vnni,emulated\"}" --split-input-file | filecheck %s --check-prefix=EMU
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2\"}" --split-input-file | filecheck %s --check-prefix=AVX2

// The AVX512-VNNI tier of a conv of int8 data provably >= 0 (a relu's) against an int8 param weight: the
// micro-kernel `cvmc.mmk_u8s8` with `isa = "avx512-vnni"` (`vpdpbusd`, 16 lanes a vector), the weight packed when
// compiling in one block of the 20 channels rounded up to 32 lanes (at most 64), 3 x 3 x 4 = 36 taps in 9 steps
// of 4 bytes a lane: (1 block, 9 steps, 4 x 32 bytes). Emulated: the same op, packing and tiling, `emulated = 1`
// (the portable lowering). One tier down (avx2): AVX2's kernel, blocks of 16 lanes, no `isa`.

func.func @main(%data: tensor<1x4x3x5xi32, #cvm.prec<8>>) -> tensor<1x20x3x5xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<-127> : tensor<20x4x3x3xi32, #cvm.prec<8>>
  %r = cvm.relu %data : (tensor<1x4x3x5xi32, #cvm.prec<8>>) -> tensor<1x4x3x5xi32, #cvm.prec<8>>
  %c1 = cvm.conv2d %r, %w {channels = 20 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x4x3x5xi32, #cvm.prec<8>>, tensor<20x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x20x3x5xi32, #cvm.prec<22>>
  %s1 = cvm.cvm_right_shift %c1 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x20x3x5xi32, #cvm.prec<22>>) -> tensor<1x20x3x5xi32, #cvm.prec<8>>
  func.return %s1 : tensor<1x20x3x5xi32, #cvm.prec<8>>
}

// CHECK:       builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx512-vnni", mmk = true, emulated = false, vector_bytes = 32>}
// CHECK:       "memref.global"() <{sym_name = "param_4_w_packed", type = memref<1x9x128xi8>
// CHECK-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x20x3x5xi32>, %1: memref<1x5x7x4xi8>, %2: memref<1x9x128xi8>) {
// CHECK:         memref.alloca() : memref<32x5xi32>
// CHECK:         "cvmc.mmk_u8s8"(%1, {{.*}}) <{depth = 4 : i64, {{.*}}, rows = 4 : i64, lanes = 32 : i64, {{.*}}, isa = "avx512-vnni"}>
// CHECK:         "cvmc.mmk_u8s8"(%1, {{.*}}) <{depth = 4 : i64, {{.*}}, rows = 1 : i64, lanes = 32 : i64, {{.*}}, isa = "avx512-vnni"}>
// CHECK-NOT:     emulated = 1
// EMU:         builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx512-vnni", mmk = true, emulated = true, vector_bytes = 32>}
// EMU:         "cvmc.mmk_u8s8"(%1, {{.*}}) <{{{.*}}rows = 4 : i64, lanes = 32 : i64, {{.*}}, isa = "avx512-vnni", emulated = 1 : i64}>
// AVX2:        "memref.global"() <{sym_name = "param_4_w_packed", type = memref<2x9x64xi8>
// AVX2:        "cvmc.mmk_u8s8"(%1, {{.*}}) <{{{.*}}rows = 4 : i64, lanes = 16 : i64, row_stride = 4 : i64, kh = 3 : i64, stride_h = 28 : i64, kw = 3 : i64, stride_w = 4 : i64}>
// AVX2-NOT:    isa =

// -----

// The same conv of data that may be negative: on AVX512-VNNI the input is packed as x + 128 (`vpdpbusd` never
// saturates, u8 up to 254) and each block's weight sums come from the micro-kernel on a row of 36 ones (one
// row, pixel-major), then 128 * sum(w) is subtracted with the (absent) bias. On AVX2 (`vpmaddubsw` saturates)
// such data takes the int16 kernel.

func.func @main(%data: tensor<1x4x3x5xi32, #cvm.prec<8>>) -> tensor<1x20x3x5xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<-127> : tensor<20x4x3x3xi32, #cvm.prec<8>>
    
  %c1 = cvm.conv2d %data, %w {channels = 20 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x4x3x5xi32, #cvm.prec<8>>, tensor<20x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x20x3x5xi32, #cvm.prec<22>>
  %s1 = cvm.cvm_right_shift %c1 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x20x3x5xi32, #cvm.prec<22>>) -> tensor<1x20x3x5xi32, #cvm.prec<8>>
  func.return %s1 : tensor<1x20x3x5xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @pack(%0: memref<1x5x7x4xi8>, %1: memref<1x4x3x5xi32>) {
// CHECK:         arith.constant 128 : i32
// CHECK-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x20x3x5xi32>, %1: memref<1x5x7x4xi8>, %2: memref<1x9x128xi8>) {
// CHECK-DAG:     %[[ZP:.*]] = arith.constant 128 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i8
// CHECK:         %[[SUMS:.*]] = memref.alloca() : memref<1x32xi32>
// CHECK-NEXT:    %[[ONES:.*]] = memref.alloca() : memref<36xi8>
// CHECK:           memref.store %[[ONE]], %[[ONES]]
// CHECK:         "cvmc.mmk_u8s8"(%[[ONES]], %{{.*}}, %2, %{{.*}}, %{{.*}}, %{{.*}}, %[[SUMS]], %{{.*}}, %{{.*}}) <{depth = 36 : i64, {{.*}}, rows = 1 : i64, lanes = 32 : i64, row_stride = 0 : i64, {{.*}}, pixel_major = 1 : i64, isa = "avx512-vnni"}>
// CHECK:           %[[S:.*]] = memref.load %[[SUMS]]
// CHECK-NEXT:      %[[C:.*]] = arith.muli %[[S]], %[[ZP]] : i32
// CHECK-NEXT:      arith.subi %{{.*}}, %[[C]] : i32
// AVX2-LABEL:  func.func @conv2d_cvm_right_shift(%0: memref<1x20x3x5xi32>, %1: memref<1x5x7x4xi16>, %2: memref<2x18x32xi16>) {
// AVX2:          "cvmc.mmk_i16"
