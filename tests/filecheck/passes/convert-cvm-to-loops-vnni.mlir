// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx512-vnni,no-mmk\"}" --split-input-file | filecheck %s
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2,no-mmk\"}" --split-input-file | filecheck %s --check-prefix=NOVNNI

// Both operands of the conv provably fit int8 (precision 8: |x| <= 127) and VNNI is on, without the micro-kernel
// (no-mmk here; a grouped conv or a weight that is no param likewise; convert-cvm-to-loops-vnni-mmk.mlir checks
// the VNNI tier's micro-kernel): the input is packed as
// x + 128 in bytes (padding 128 too), the weight as signed bytes in rows padded to 64, and each output is one
// `cvmc.dot_u8s8` (vpdpbusd) minus 128 * sum(w) of its weight row: blocks of 8 output pixels share each weight
// load (`rows = 8`, 8 results), the rest of a tile one pixel at a time. Without VNNI the same conv is int16.

func.func @main(%data: tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<-127> : tensor<2x2x3x3xi32, #cvm.prec<8>>
  %c1 = cvm.conv2d %data, %w {channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x4xi32, #cvm.prec<8>>, tensor<2x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<21>>
  %s1 = cvm.cvm_right_shift %c1 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x2x4x4xi32, #cvm.prec<21>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  func.return %s1 : tensor<1x2x4x4xi32, #cvm.prec<8>>
}

// CHECK:       "memref.global"() <{sym_name = "param_3_w_packed", type = memref<2x64xi8>, initial_value = dense<"0x818181818181818181818181818181818181000000
// CHECK-LABEL: func.func @pack(%0: memref<1x6x6x2xi8>, %1: memref<1x2x4x4xi32>) {
// CHECK-DAG:     %[[PAD:.*]] = arith.constant -128 : i8
// CHECK-DAG:     %[[ZP:.*]] = arith.constant 128 : i32
// CHECK:         %[[X:.*]] = memref.load %1
// CHECK-NEXT:    %[[U:.*]] = arith.addi %[[X]], %[[ZP]] : i32
// CHECK-NEXT:    %[[B:.*]] = arith.trunci %[[U]] : i32 to i8
// CHECK-NEXT:    arith.select %{{.*}}, %[[B]], %[[PAD]] : i8
// CHECK-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x2x4x4xi32>, %1: memref<1x6x6x2xi8>, %2: memref<2x64xi8>) {
// CHECK:           %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i32) {
// CHECK:             arith.extsi %{{.*}} : i8 to i32
// CHECK:           %[[COMP:.*]] = arith.muli %[[SUM]], %{{.*}} : i32
// CHECK:             %[[D0:[^,]*]], %{{.*}} = "cvmc.dot_u8s8"(%{{.*}}, %{{.*}}, %{{.*}}, %2, %{{.*}}) <{depth = 64 : i64, split = 3 : i64, rows = 8 : i64}> : (memref<1x4x64xi8>, index, index, memref<2x64xi8>, index) -> (i32, i32, i32, i32, i32, i32, i32, i32)
// CHECK-NEXT:        arith.subi %[[D0]], %[[COMP]] : i32
// CHECK:             %[[DOT:.*]] = "cvmc.dot_u8s8"(%{{.*}}, %{{.*}}, %{{.*}}, %2, %{{.*}}) <{depth = 64 : i64, split = 3 : i64}> : (memref<1x4x64xi8>, index, index, memref<2x64xi8>, index) -> i32
// CHECK-NEXT:        arith.subi %[[DOT]], %[[COMP]] : i32

// NOVNNI-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x2x4x4xi32>, %1: memref<1x6x6x2xi16>, %2: memref<2x32xi16>) {
// NOVNNI-NOT:   cvmc.dot_u8s8

// -----

// One past the int8 bound: `where` takes the condition's precision (2), but its values come from a 9-bit
// tensor, so the dense's data may hold +-255 and takes the int16 path even with VNNI on; the 8-bit dense beside
// it takes u8 x s8 (without VNNI both are the same int16 kernel).

func.func @main(%data: tensor<2x4xi32, #cvm.prec<8>>) -> (tensor<2x3xi32, #cvm.prec<13>>, tensor<2x3xi32, #cvm.prec<19>>) {
  %w = cvm.param "w" dense<1> : tensor<3x4xi32, #cvm.prec<8>>
  %c = cvm.param "c" dense<1> : tensor<2x4xi32, #cvm.prec<2>>
  %wide = cvm.cvm_left_shift %data {precision = 9 : i64, shift_bit = 1 : i64} : (tensor<2x4xi32, #cvm.prec<8>>) -> tensor<2x4xi32, #cvm.prec<9>>
  %x = cvm.where %c, %wide, %data : (tensor<2x4xi32, #cvm.prec<2>>, tensor<2x4xi32, #cvm.prec<9>>, tensor<2x4xi32, #cvm.prec<8>>) -> tensor<2x4xi32, #cvm.prec<2>>
  %d9 = cvm.dense %x, %w {units = 3 : i64, use_bias = false} : (tensor<2x4xi32, #cvm.prec<2>>, tensor<3x4xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<13>>
  %d8 = cvm.dense %data, %w {units = 3 : i64, use_bias = false} : (tensor<2x4xi32, #cvm.prec<8>>, tensor<3x4xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<19>>
  func.return %d9, %d8 : tensor<2x3xi32, #cvm.prec<13>>, tensor<2x3xi32, #cvm.prec<19>>
}

// CHECK-LABEL: func.func @dense(%0: memref<2x3xi32>, %1: memref<2x4xi16>, %2: memref<3x4xi16>) {
// CHECK-NOT:     cvmc.dot_u8s8
// CHECK-LABEL: func.func @dense_1(%0: memref<2x3xi32>, %1: memref<2x64xi8>, %2: memref<3x64xi8>) {
// CHECK:         "cvmc.dot_u8s8"(%1, %{{.*}}, %2, %{{.*}}) <{depth = 64 : i64, split = 2 : i64}>
// NOVNNI-LABEL: func.func @dense(%0: memref<2x3xi32>, %1: memref<2x4xi16>, %2: memref<3x4xi16>) {
// NOVNNI-NOT:   func.func @dense_1(
