// RUN: cvm-opt %s -p 'cvm-mark-views,cvm-pack-operands{target="x86:avx2"}' | filecheck %s --check-prefix=AVX2
// RUN: cvm-opt %s -p 'cvm-mark-views,cvm-pack-operands{target="x86:avx512-vnni"}' | filecheck %s --check-prefix=VNNI
// RUN: cvm-opt %s -p 'cvm-mark-views,cvm-pack-operands{target="x86:avx2,no-mmk"}' | filecheck %s --check-prefix=NOMMK
// RUN: cvm-opt %s -p 'cvm-mark-views,cvm-pack-operands{target="cuda:sm_90"}' | filecheck %s --check-prefix=GPU

// Each conv2d and dense reads its operands packed, in the element type the values' bounds and the target allow:
// int8-range operands as i16 on AVX2 (ui8 without a zero point for the blocked conv2d of a relu's output: x >= 0),
// ui8 + 128 x i8 with VNNI, i8 x i8 on a GPU; a param weight as register-blocked rows on a CPU with the
// micro-kernels, plain rows without them or on a GPU. The conv2d reads the packs in place of its operands.

func.func @main(%data: tensor<1x3x8x8xi32, #cvm.prec<8>>) -> (tensor<1x10xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<22>>) {
  %w = cvm.param "w" dense<1> : tensor<4x3x3x3xi32, #cvm.prec<8>>
  %c = cvm.conv2d %data, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<21>>
  %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 5 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<21>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %r = cvm.relu %s : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %w2 = cvm.param "w2" dense<1> : tensor<4x4x3x3xi32, #cvm.prec<8>>
  %c2 = cvm.conv2d %r, %w2 {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<4x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<22>>
  %f = cvm.flatten %r : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x256xi32, #cvm.prec<8>>
  %v = cvm.param "v" dense<1> : tensor<10x256xi32, #cvm.prec<8>>
  %d = cvm.dense %f, %v {units = 10 : i64, use_bias = false} : (tensor<1x256xi32, #cvm.prec<8>>, tensor<10x256xi32, #cvm.prec<8>>) -> tensor<1x10xi32, #cvm.prec<25>>
  %y = cvm.cvm_right_shift %d {precision = 8 : i64, shift_bit = 14 : i64} : (tensor<1x10xi32, #cvm.prec<25>>) -> tensor<1x10xi32, #cvm.prec<8>>
  func.return %y, %c2 : tensor<1x10xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<22>>
}

// AVX2:         cvm_sched.pack %data {to = "nhwc", {{.*}} -> tensor<1x10x10x3xi16>
// AVX2-NEXT:    cvm_sched.pack %w {to = "conv_weight_blocked", {{.*}} -> tensor<1x14x32xi16>
// AVX2-NEXT:    %c = cvm.conv2d {{.*}} : (tensor<1x10x10x3xi16>, tensor<1x14x32xi16>)
// AVX2:         cvm_sched.pack %r {to = "nhwc", {{.*}} -> tensor<1x10x10x4xui8>
// AVX2-NEXT:    cvm_sched.pack %w2 {to = "conv_weight_blocked", {{.*}} -> tensor<1x9x64xi8>
// AVX2-NEXT:    %c2 = cvm.conv2d {{.*}} : (tensor<1x10x10x4xui8>, tensor<1x9x64xi8>)
// AVX2:         cvm_sched.pack %f {to = "rows", {{.*}} -> tensor<1x256xi16>
// AVX2-NEXT:    cvm_sched.pack %v {to = "rows", {{.*}} -> tensor<10x256xi16>
// AVX2-NEXT:    %d = cvm.dense {{.*}} : (tensor<1x256xi16>, tensor<10x256xi16>)

// VNNI:         cvm_sched.pack %data {to = "nhwc", {{.*}}zero_point = 128 : i64} {{.*}} -> tensor<1x10x10x3xui8>
// VNNI-NEXT:    cvm_sched.pack %w {to = "conv_weight_blocked", {{.*}} -> tensor<1x7x64xi8>
// VNNI:         cvm_sched.pack %f {to = "rows", {{.*}}zero_point = 128 : i64} {{.*}} -> tensor<1x256xui8>
// VNNI-NEXT:    cvm_sched.pack %v {to = "rows", {{.*}} -> tensor<10x256xi8>

// NOMMK:        cvm_sched.pack %data {to = "nhwc", {{.*}} -> tensor<1x10x10x3xi16>
// NOMMK-NEXT:   cvm_sched.pack %w {to = "conv_weight", {{.*}} -> tensor<4x32xi16>

// GPU:          cvm_sched.pack %data {to = "nhwc", {{.*}} -> tensor<1x10x10x3xi8>
// GPU-NEXT:     cvm_sched.pack %w {to = "conv_weight", {{.*}} -> tensor<4x28xi8>
// GPU:          cvm_sched.pack %f {to = "rows", {{.*}} -> tensor<1x256xi8>
