// RUN: cvm-opt %s -p "cvm-to-loops{target=\"x86:avx512-vnni,no-mmk\"}" -t llvm-ir | filecheck %s

// The u8 x s8 conv of a precision-8 input without the micro-kernel (no-mmk) prints as a loop of vpdpbusd over
// 64-byte steps: blocks of 8 output pixels (8 accumulators sharing each load of the weight row; row sums by a
// shuffle tree), then single pixels (one accumulator, one reduction).

func.func @main(%data: tensor<1x2x4x9xi32, #cvm.prec<8>>) -> tensor<1x2x4x9xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<-127> : tensor<2x2x3x3xi32, #cvm.prec<8>>
  %c1 = cvm.conv2d %data, %w {channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x9xi32, #cvm.prec<8>>, tensor<2x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x4x9xi32, #cvm.prec<21>>
  %s1 = cvm.cvm_right_shift %c1 {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x2x4x9xi32, #cvm.prec<21>>) -> tensor<1x2x4x9xi32, #cvm.prec<8>>
  func.return %s1 : tensor<1x2x4x9xi32, #cvm.prec<8>>
}

// CHECK-LABEL: define internal void @"__cvmc_body.conv2d_cvm_right_shift"
// CHECK:       dot.body:
// CHECK-COUNT-8: call <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"(<16 x i32> %{{.*}}, <64 x i8> %{{.*}}, <64 x i8> %{{.*}})
// CHECK-NOT:   vpdpbusd
// CHECK:       dot.end:
// CHECK-COUNT-14: shufflevector <16 x i32>
// CHECK:       extractelement <8 x i32>
// CHECK:       dot.body{{.*}}:
// CHECK-NEXT:    getelementptr
// CHECK-NEXT:    load <64 x i8>
// CHECK-NEXT:    getelementptr
// CHECK-NEXT:    load <64 x i8>
// CHECK-NEXT:    call <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"
// CHECK:       dot.end{{.*}}:
// CHECK-NEXT:    call i32 @"llvm.vector.reduce.add.v16i32"
// CHECK:       declare <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"(<16 x i32> %{{.*}}, <64 x i8> %{{.*}}, <64 x i8> %{{.*}}) nounwind readnone
