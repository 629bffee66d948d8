// RUN: cvm-opt %s | cvm-opt | filecheck %s

// The scheduled cvm level's ops round-trip: a view at the bounds of its source, each packing, a kernel.

func.func @views(%x: tensor<2x9xi32, #cvm.prec<8>>) -> (tensor<9x2xi32, #cvm.prec<8>>, tensor<2xi32, #cvm.prec<8>>) {
  %t = cvm_sched.view %x {layout = strided<[1, 9]>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9x2xi32, #cvm.prec<8>>
  %s = cvm_sched.view %x {layout = strided<[9], offset: 8>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<2xi32, #cvm.prec<8>>
  func.return %t, %s : tensor<9x2xi32, #cvm.prec<8>>, tensor<2xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @views
// CHECK-NEXT:    %t = cvm_sched.view %x {layout = strided<[1, 9]>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9x2xi32, #cvm.prec<8>>
// CHECK-NEXT:    %s = cvm_sched.view %x {layout = strided<[9], offset: 8>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<2xi32, #cvm.prec<8>>

func.func @packs(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>, %w: tensor<4x3x3x3xi32, #cvm.prec<8>>, %m: tensor<2x27xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xi16>
  %1 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 0, 0>, zero_point = 128 : i64} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x8x8x3xui8>
  %2 = cvm_sched.pack %w {to = "conv_weight", width = 32 : i64} : tensor<4x3x3x3xi32, #cvm.prec<8>> -> tensor<4x32xi16>
  %3 = cvm_sched.pack %w {to = "conv_weight_blocked", width = 28 : i64, lanes = 8 : i64, group = 4 : i64} : tensor<4x3x3x3xi32, #cvm.prec<8>> -> tensor<1x7x32xi8>
  %4 = cvm_sched.pack %m {to = "rows", width = 27 : i64} : tensor<2x27xi32, #cvm.prec<8>> -> tensor<2x27xi32>
  func.return
}

// CHECK-LABEL: func.func @packs
// CHECK-NEXT:    %0 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xi16>
// CHECK-NEXT:    %1 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 0, 0>, zero_point = 128 : i64} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x8x8x3xui8>
// CHECK-NEXT:    %2 = cvm_sched.pack %w {to = "conv_weight", width = 32 : i64} : tensor<4x3x3x3xi32, #cvm.prec<8>> -> tensor<4x32xi16>
// CHECK-NEXT:    %3 = cvm_sched.pack %w {to = "conv_weight_blocked", width = 28 : i64, lanes = 8 : i64, group = 4 : i64} : tensor<4x3x3x3xi32, #cvm.prec<8>> -> tensor<1x7x32xi8>
// CHECK-NEXT:    %4 = cvm_sched.pack %m {to = "rows", width = 27 : i64} : tensor<2x27xi32, #cvm.prec<8>> -> tensor<2x27xi32>

func.func @kernel(%a: tensor<4xi32, #cvm.prec<8>>, %b: tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>> {
  %y = cvm_sched.kernel (%a, %b) : (tensor<4xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>> {
  ^bb0(%u: tensor<4xi32, #cvm.prec<8>>, %v: tensor<4xi32, #cvm.prec<8>>):
    %r = cvm.relu %u : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    %s = cvm.elemwise_add %r, %v : (tensor<4xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>>
    cvm_sched.yield %s : tensor<4xi32, #cvm.prec<9>>
  }
  func.return %y : tensor<4xi32, #cvm.prec<9>>
}

// CHECK-LABEL: func.func @kernel
// CHECK-NEXT:    %y = cvm_sched.kernel(%a, %b) : (tensor<4xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>> {
// CHECK-NEXT:    ^bb0(%u: tensor<4xi32, #cvm.prec<8>>, %v: tensor<4xi32, #cvm.prec<8>>):
// CHECK-NEXT:      %r = cvm.relu %u
// CHECK-NEXT:      %s = cvm.elemwise_add %r, %v
// CHECK-NEXT:      cvm_sched.yield %s : tensor<4xi32, #cvm.prec<9>>
// CHECK-NEXT:    }

// An outlined kernel (cvm-bufferize): loads of what it reads (a broadcast view; a ui8 packing with its zero
// point), a store of what it writes.
func.func @outlined(%out: memref<2x4xi32>, %x: memref<2x4xi32, strided<[0, 1]>>, %p: memref<8xui8>) {
  %0 = cvm_sched.load %x : memref<2x4xi32, strided<[0, 1]>> -> tensor<4xi32, #cvm.prec<8>>
  %1 = cvm_sched.load %p {zero_point = 128 : i64} : memref<8xui8> -> tensor<8xui8>
  %2 = cvm.relu %0 : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  cvm_sched.store %2, %out : tensor<4xi32, #cvm.prec<8>>, memref<2x4xi32>
  func.return
}
// CHECK-LABEL: func.func @outlined
// CHECK-NEXT:    %0 = cvm_sched.load %x : memref<2x4xi32, strided<[0, 1]>> -> tensor<4xi32, #cvm.prec<8>>
// CHECK-NEXT:    %1 = cvm_sched.load %p {zero_point = 128 : i64} : memref<8xui8> -> tensor<8xui8>
// CHECK-NEXT:    %2 = cvm.relu %0
// CHECK-NEXT:    cvm_sched.store %2, %out : tensor<4xi32, #cvm.prec<8>>, memref<2x4xi32>

// The host (cvm-bufferize): a call carries its work (0: the bound), the footprint its bytes (0: the bound).
func.func @host(%data: memref<4xi32>, %arena: memref<64xi8>) {
  cvm_sched.call @outlined(%data, %data) {work = 0 : i64} : memref<4xi32>, memref<4xi32>
  cvm_sched.call @outlined(%data) {work = 9223372036854775807 : i64} : memref<4xi32>
  cvm_sched.footprint {intermediate_bytes = 0 : i64}
  func.return
}
// CHECK-LABEL: func.func @host
// CHECK-NEXT:    cvm_sched.call @outlined(%data, %data) {work = 0 : i64} : memref<4xi32>, memref<4xi32>
// CHECK-NEXT:    cvm_sched.call @outlined(%data) {work = 9223372036854775807 : i64} : memref<4xi32>
// CHECK-NEXT:    cvm_sched.footprint {intermediate_bytes = 0 : i64}

// A view of a packed copy (cvm-fuse-packs): the interior of a padded NHWC i16 copy, read back as its values.
func.func @copy_view(%x: tensor<1x2x2x2xi32, #cvm.prec<8>>) -> tensor<1x2x2x2xi32, #cvm.prec<8>> {
  %p = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>} : tensor<1x2x2x2xi32, #cvm.prec<8>> -> tensor<1x4x4x2xi16>
  %v = cvm_sched.view %p {layout = strided<[32, 1, 8, 2], offset: 10>} : tensor<1x4x4x2xi16> -> tensor<1x2x2x2xi32, #cvm.prec<8>>
  func.return %v : tensor<1x2x2x2xi32, #cvm.prec<8>>
}
// CHECK-LABEL: func.func @copy_view
// CHECK:         cvm_sched.view %p {layout = strided<[32, 1, 8, 2], offset: 10>} : tensor<1x4x4x2xi16> -> tensor<1x2x2x2xi32, #cvm.prec<8>>
