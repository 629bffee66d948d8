// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx512-vnni\"}" -t llvm-ir | filecheck %s
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx512-vnni,emulated\"}" -t llvm-ir | filecheck %s --check-prefix=EMU
// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:amx\"}" -t llvm-ir | filecheck %s --check-prefix=AMX

// The AVX512-VNNI tier's micro-kernel for 4 pixels x 32 lanes (20 channels): per step two 64-byte weight loads,
// then for each pixel its 4 bytes broadcast and two `vpdpbusd` (8 in all, on 8 accumulators of 16 int32 lanes).
// Emulated: the same function (`_emu`) with no intrinsic: each product zero- and sign-extended to int32,
// multiplied, and a lane's four products added (the sums `vpdpbusd` makes, wrapping the same way).
// On AMX, tiles of 16 pixels x 16 channels (two blocks), the taps and steps fixed: per tap the pixels' 4 bytes as a
// 16 x 4-byte tile (a row every 4 bytes), the weights' one step as a 1 x 64-byte tile, one `tdpbusd`; the
// 5 pixels of a row are single-pixel tiles (1 row).

func.func @main(%data: tensor<1x4x3x5xi32, #cvm.prec<8>>) -> tensor<1x20x3x5xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<-127> : tensor<20x4x3x3xi32, #cvm.prec<8>>
  %r = cvm.relu %data : (tensor<1x4x3x5xi32, #cvm.prec<8>>) -> tensor<1x4x3x5xi32, #cvm.prec<8>>
  %c1 = cvm.conv2d %r, %w {channels = 20 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x4x3x5xi32, #cvm.prec<8>>, tensor<20x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x20x3x5xi32, #cvm.prec<22>>
  %s1 = cvm.cvm_right_shift %c1 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x20x3x5xi32, #cvm.prec<22>>) -> tensor<1x20x3x5xi32, #cvm.prec<8>>
  func.return %s1 : tensor<1x20x3x5xi32, #cvm.prec<8>>
}

// CHECK-LABEL: define internal void @"__cvmc_mmk_vnni_r4_l32"(
// CHECK:       mmk.body:
// CHECK:         load <64 x i8>
// CHECK:         load <64 x i8>
// CHECK-COUNT-8: call <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"(<16 x i32> %{{.*}}, <64 x i8> %{{.*}}, <64 x i8> %{{.*}})
// CHECK:       mmk.end:
// CHECK:       declare <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"(<16 x i32> %{{.*}}, <64 x i8> %{{.*}}, <64 x i8> %{{.*}}) nounwind readnone

// EMU-NOT:     vpdpbusd
// EMU-LABEL:   define internal void @"__cvmc_mmk_vnni_r4_l32_emu"(
// EMU:         mmk.body:
// EMU:           zext <64 x i8> %{{.*}} to <64 x i32>
// EMU-NEXT:      sext <64 x i8> %{{.*}} to <64 x i32>
// EMU-NEXT:      mul <64 x i32>
// EMU-COUNT-4:   shufflevector <64 x i32>
// EMU-NOT:     vpdpbusd

// AMX-LABEL:   define internal void @"__cvmc_mmk_amx_r16_s1_k3x3"(
// AMX:           call x86_amx @"llvm.x86.tilezero.internal"(i16 16, i16 64)
// AMX-COUNT-9:   call x86_amx @"llvm.x86.tdpbusd.internal"(i16 16, i16 64, i16 4, x86_amx %{{.*}}, x86_amx %{{.*}}, x86_amx %{{.*}})
// AMX:           call void @"llvm.x86.tilestored64.internal"(i16 16, i16 64
// AMX-LABEL:   define internal void @"__cvmc_mmk_amx_r1_s1_k3x3"(
// AMX:           call x86_amx @"llvm.x86.tileloadd64.internal"(i16 1, i16 4, ptr %{{.*}}, i64 %{{.*}})
