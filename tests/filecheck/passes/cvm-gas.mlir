// RUN: cvm-opt %s -p cvm-gas | filecheck %s
// RUN: cvm-translate --import-cvm %S/../../data/cvm/model_digits_cnn_000/model.json %S/../../data/cvm/model_digits_cnn_000/params.bin | cvm-opt -p cvm-gas | filecheck %s --check-prefix=CNN

// The example of spec section 3: conv2d (1,3,8,8) * (4,3,3,3) + bias costs 14048 in all:
// 5 per element of the input (960) and params (540 + 20), and (3 * 27 + 1 + 5) per output element (12528).

// CHECK-LABEL: func.func @conv(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<22>> attributes {cvm.gas = 14048 : i64} {
// CHECK-NEXT:    %w = cvm.param "w" {cvm.gas = 540 : i64} dense<1> : tensor<4x3x3x3xi32, #cvm.prec<8>>
// CHECK-NEXT:    %b = cvm.param "b" {cvm.gas = 20 : i64} dense<1> : tensor<4xi32, #cvm.prec<8>>
// CHECK-NEXT:    %0 = cvm.conv2d %x, %w, %b {cvm.gas = 12528 : i64, channels = 4 : i64, kernel_size = array<i64: 3, 3>}
func.func @conv(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<22>> {
  %w = cvm.param "w" dense<1> : tensor<4x3x3x3xi32, #cvm.prec<8>>
  %b = cvm.param "b" dense<1> : tensor<4xi32, #cvm.prec<8>>
  %0 = cvm.conv2d %x, %w, %b {channels = 4 : i64, kernel_size = array<i64: 3, 3>} : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<22>>
  func.return %0 : tensor<1x4x6x6xi32, #cvm.prec<22>>
}

// Per-element ops of max_pool2d (the pool area, 4), sum (the reduction ratio, 16) and dense (3K = 12);
// arguments cost 5 per element (1280 + 20 + 40).

// CHECK-LABEL: func.func @ops(
// CHECK-SAME:    attributes {cvm.gas = 2034 : i64}
// CHECK-NEXT:    %0 = cvm.max_pool2d %x {cvm.gas = 576 : i64, pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}
// CHECK-NEXT:    %1 = cvm.sum %0 {cvm.gas = 84 : i64, axis = array<i64: 2, 3>}
// CHECK-NEXT:    %2 = cvm.dense %y, %w {cvm.gas = 34 : i64, units = 2 : i64, use_bias = false}
func.func @ops(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %y: tensor<1x4xi32, #cvm.prec<8>>, %w: tensor<2x4xi32, #cvm.prec<8>>) {
  %0 = cvm.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x4x4xi32, #cvm.prec<8>>
  %1 = cvm.sum %0 {axis = array<i64: 2, 3>} : (tensor<1x4x4x4xi32, #cvm.prec<8>>) -> tensor<1x4xi32, #cvm.prec<13>>
  %2 = cvm.dense %y, %w {units = 2 : i64, use_bias = false} : (tensor<1x4xi32, #cvm.prec<8>>, tensor<2x4xi32, #cvm.prec<8>>) -> tensor<1x2xi32, #cvm.prec<19>>
  func.return
}

// A corpus model: the function's total is the gas recorded in its case.json (36090).

// CNN: func.func @main({{.*}} attributes {{{.*}}cvm.gas = 36090 : i64}
