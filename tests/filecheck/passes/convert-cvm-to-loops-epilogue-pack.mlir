// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2\"}" | filecheck %s
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx2,no-mmk\"}" | filecheck %s --check-prefix=OFF

// A blocked conv2d whose output only the next conv2d reads writes that conv's padded NHWC input in its epilogue,
// and not its own int32 output: the first kernel's one argument written is the second's 6 x 7 x 16 byte input
// (u8 x s8: the relu makes it >= 0). Each parallel row writes its packed row's left and right borders, the first
// and last rows the rows above and below; the micro-kernel stores its accumulators pixel-major (`pixel_major`),
// and the epilogue runs pixel by pixel over the 16 channels, storing bytes at [n, oh + 1, ow + 1, oc]. No pack
// kernel runs between the two convolutions. Without the micro-kernel (target flag no-mmk) a pack kernel does.

func.func @main(%data: tensor<1x2x4x5xi32, #cvm.prec<8>>) -> tensor<1x16x4x5xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<1> : tensor<16x2x3x3xi32, #cvm.prec<8>>
  %c = cvm.conv2d %data, %w {channels = 16 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x5xi32, #cvm.prec<8>>, tensor<16x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x16x4x5xi32, #cvm.prec<21>>
  %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 4 : i64} : (tensor<1x16x4x5xi32, #cvm.prec<21>>) -> tensor<1x16x4x5xi32, #cvm.prec<8>>
  %r = cvm.relu %s : (tensor<1x16x4x5xi32, #cvm.prec<8>>) -> tensor<1x16x4x5xi32, #cvm.prec<8>>
  %w2 = cvm.param "w2" dense<1> : tensor<16x16x3x3xi32, #cvm.prec<8>>
  %c2 = cvm.conv2d %r, %w2 {channels = 16 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x16x4x5xi32, #cvm.prec<8>>, tensor<16x16x3x3xi32, #cvm.prec<8>>) -> tensor<1x16x4x5xi32, #cvm.prec<24>>
  %s2 = cvm.cvm_right_shift %c2 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x16x4x5xi32, #cvm.prec<24>>) -> tensor<1x16x4x5xi32, #cvm.prec<8>>
  func.return %s2 : tensor<1x16x4x5xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @conv2d_cvm_right_shift_relu(%0: memref<1x6x7x16xi8>, %1: memref<1x6x7x2xi16>, %2: memref<1x9x32xi16>) {
// CHECK:         "scf.parallel"
// CHECK-NEXT:    ^bb0(%[[OH:.*]]: index):
// CHECK-NEXT:      %[[ACC:.*]] = memref.alloca() : memref<5x16xi32>
// CHECK:             memref.store %{{.*}}, %0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x6x7x16xi8>
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[OH]], %{{.*}} : index
// CHECK:           %[[LAST:.*]] = arith.cmpi eq, %[[OH]], %{{.*}} : index
// CHECK:           "cvmc.mmk_i16"(%1, {{.*}}, %[[ACC]], {{.*}}) <{{{.*}} rows = 4 : i64, {{.*}} pixel_major = 1 : i64}>
// CHECK:           "cvmc.mmk_i16"(%1, {{.*}}, %[[ACC]], {{.*}}) <{{{.*}} rows = 1 : i64, {{.*}} pixel_major = 1 : i64}>
// CHECK:           scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        scf.for %[[O:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          memref.load %[[ACC]][%[[P]], %[[O]]] : memref<5x16xi32>
// CHECK:               %[[BYTE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK:               memref.store %[[BYTE]], %0[%{{.*}}, %{{.*}}, %{{.*}}, %[[O]]] : memref<1x6x7x16xi8>
// CHECK-NOT:   func.func @pack
// CHECK-LABEL: func.func @conv2d_cvm_right_shift(%0: memref<1x16x4x5xi32>, %1: memref<1x6x7x16xi8>, %2: memref<1x36x64xi8>) {
// CHECK:           "cvmc.mmk_u8s8"(%1,

// OFF-LABEL: func.func @conv2d_cvm_right_shift_relu(%0: memref<1x16x4x5xi32>,
// OFF:       func.func @pack
// OFF-NOT:   pixel_major
