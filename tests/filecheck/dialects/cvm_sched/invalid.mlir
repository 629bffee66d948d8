// RUN: cvm-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per rule of the scheduled cvm level's verifiers, each one past its bound (`ops.mlir` has the bound).

// view: one stride per result dim
func.func @f(%x: tensor<2x9xi32, #cvm.prec<8>>) {
  %t = cvm_sched.view %x {layout = strided<[1]>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected a layout of 2 strides (the result's rank), got 1

// -----

// view: the last element inside the source (offset 9 + 8 * 1 = 17 is its last; 10 + 8 = 18 is past it)
func.func @f(%x: tensor<2x9xi32, #cvm.prec<8>>) {
  %t = cvm_sched.view %x {layout = strided<[1], offset: 10>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected the layout within the source's 18 elements, got its last element at 18

// -----

// view: a static layout
func.func @f(%x: tensor<2x9xi32, #cvm.prec<8>>) {
  %t = cvm_sched.view %x {layout = strided<[?]>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected a static layout, got strided<[?]>

// -----

// view: no negative stride
func.func @f(%x: tensor<2x9xi32, #cvm.prec<8>>) {
  %t = cvm_sched.view %x {layout = strided<[-1], offset: 8>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected a non-negative offset and strides, got strided<[-1], offset: 8>

// -----

// view: the element type kept
func.func @f(%x: tensor<2x9xi32, #cvm.prec<8>>) {
  %t = cvm_sched.view %x {layout = strided<[1]>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9xi16>
  func.return
}
// CHECK: Operation does not verify: expected a result of element type i32, got i16

// -----

// view: never of a view
func.func @f(%x: tensor<2x9xi32, #cvm.prec<8>>) {
  %t = cvm_sched.view %x {layout = strided<[1, 9]>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9x2xi32, #cvm.prec<8>>
  %u = cvm_sched.view %t {layout = strided<[1]>} : tensor<9x2xi32, #cvm.prec<8>> -> tensor<18xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected a source that is no view (compose the layouts over its base)

// -----

// pack: a known packing
func.func @f(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %x {to = "nchw", padding = array<i64: 1, 1>} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xi16>
  func.return
}
// CHECK: Operation does not verify: expected 'to' in nhwc, rows, conv_weight, conv_weight_blocked, got 'nchw'

// -----

// pack: the fields of its packing
func.func @f(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>, width = 3 : i64} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xi16>
  func.return
}
// CHECK: Operation does not verify: expected the fields ['padding'] for 'to' = 'nhwc', got ['padding', 'width']

// -----

// pack: a packed element type
func.func @f(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xi64>
  func.return
}
// CHECK: Operation does not verify: expected a result element type in i32, i16, i8, ui8, got i64

// -----

// pack: a zero point only on ui8
func.func @f(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>, zero_point = 128 : i64} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xi8>
  func.return
}
// CHECK: Operation does not verify: expected 'zero_point' only on a ui8 'nhwc' or 'rows' packing, got it on 'nhwc' to i8

// -----

// pack: no negative padding
func.func @f(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: -1, 0>} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x6x8x3xi16>
  func.return
}
// CHECK: Operation does not verify: expected a 4-D source and two paddings >= 0, got [1, 3, 8, 8] and [-1, 0]

// -----

// pack: the packed shape
func.func @f(%x: tensor<1x3x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>} : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x4xi16>
  func.return
}
// CHECK: Operation does not verify: expected a result of shape [1, 10, 10, 3], got [1, 10, 10, 4]

// -----

// pack: rows no narrower than the source (27 columns into 26)
func.func @f(%m: tensor<2x27xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %m {to = "rows", width = 26 : i64} : tensor<2x27xi32, #cvm.prec<8>> -> tensor<2x26xi16>
  func.return
}
// CHECK: Operation does not verify: expected a 2-D source of at most 'width' = 26 columns, got [2, 27]

// -----

// pack: weight rows no narrower than C KH KW (27 into 26)
func.func @f(%w: tensor<4x3x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %w {to = "conv_weight", width = 26 : i64} : tensor<4x3x3x3xi32, #cvm.prec<8>> -> tensor<4x26xi16>
  func.return
}
// CHECK: Operation does not verify: expected a 4-D weight of at most 'width' = 26 elements a row, got [4, 3, 3, 3]

// -----

// pack: a group dividing the width
func.func @f(%w: tensor<4x3x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %w {to = "conv_weight_blocked", width = 30 : i64, lanes = 8 : i64, group = 4 : i64} : tensor<4x3x3x3xi32, #cvm.prec<8>> -> tensor<1x7x32xi8>
  func.return
}
// CHECK: Operation does not verify: expected 'lanes' >= 1 and 'group' >= 1 dividing 'width' = 30, got 8 and 4

// -----

// kernel: block arguments of the inputs' types
func.func @f(%a: tensor<4xi32, #cvm.prec<8>>) {
  %y = cvm_sched.kernel(%a) : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>> {
  ^bb0(%u: tensor<4xi32, #cvm.prec<7>>):
    %r = cvm.relu %u : (tensor<4xi32, #cvm.prec<7>>) -> tensor<4xi32, #cvm.prec<7>>
    cvm_sched.yield %r : tensor<4xi32, #cvm.prec<7>>
  }
  func.return
}
// CHECK: Operation does not verify: expected block arguments of the inputs' types ['tensor<4xi32, #cvm.prec<8>>'], got ['tensor<4xi32, #cvm.prec<7>>']

// -----

// kernel: yielded values of the results' types
func.func @f(%a: tensor<4xi32, #cvm.prec<8>>) {
  %y = cvm_sched.kernel(%a) : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>> {
  ^bb0(%u: tensor<4xi32, #cvm.prec<8>>):
    %r = cvm.relu %u : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    cvm_sched.yield %r : tensor<4xi32, #cvm.prec<8>>
  }
  func.return
}
// CHECK: Operation does not verify: expected yielded values of the results' types ['tensor<4xi32, #cvm.prec<9>>'], got ['tensor<4xi32, #cvm.prec<8>>']

// -----

// kernel: isolated from above
func.func @f(%a: tensor<4xi32, #cvm.prec<8>>) {
  %y = cvm_sched.kernel() : () -> tensor<4xi32, #cvm.prec<8>> {
    %r = cvm.relu %a : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    cvm_sched.yield %r : tensor<4xi32, #cvm.prec<8>>
  }
  func.return
}
// CHECK: Operation does not verify: Operation using value defined out of its IsolatedFromAbove parent

// -----

// yield: only in a kernel
func.func @f(%a: tensor<4xi32, #cvm.prec<8>>) {
  cvm_sched.yield %a : tensor<4xi32, #cvm.prec<8>>
}
// CHECK: Operation does not verify: 'cvm_sched.yield' expects parent op 'cvm_sched.kernel'

// -----

// pack: no attribute (its buffer is placed by cvm-bufferize)
func.func @f(%m: tensor<2x27xi32, #cvm.prec<8>>) {
  %0 = cvm_sched.pack %m {to = "rows", width = 27 : i64, cvm.offset = 64 : i64} : tensor<2x27xi32, #cvm.prec<8>> -> tensor<2x27xi16>
  func.return
}
// CHECK: Operation does not verify: unknown attribute 'cvm.offset': a pack takes none (`cvm-bufferize` places its buffer)

// -----

// load: integer elements
func.func @f(%x: memref<4xf32>) {
  %0 = cvm_sched.load %x : memref<4xf32> -> tensor<4xi32>
  func.return
}
// CHECK: Operation does not verify: expected 'source' of integer elements, got memref<4xf32>

// -----

// load: a static shape
func.func @f(%x: memref<4xi32>) {
  %0 = cvm_sched.load %x : memref<4xi32> -> tensor<?xi32>
  func.return
}
// CHECK: Operation does not verify: expected 'result' of a static shape, got tensor<?xi32>

// -----

// store: integer elements
func.func @f(%v: tensor<4xi32>, %out: memref<4xf32>) {
  cvm_sched.store %v, %out : tensor<4xi32>, memref<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'dest' of integer elements, got memref<4xf32>

// -----

// call: work >= 0
func.func @f(%x: memref<4xi32>) {
  cvm_sched.call @k(%x) {work = -1 : i64} : memref<4xi32>
  func.return
}
// CHECK: Operation does not verify: expected 'work' >= 0, got -1

// -----

// call: views (memrefs) only
func.func @f(%x: tensor<4xi32>) {
  cvm_sched.call @k(%x) {work = 1 : i64} : tensor<4xi32>
  func.return
}
// CHECK: memref

// -----

// footprint: bytes >= 0
func.func @f() {
  cvm_sched.footprint {intermediate_bytes = -1 : i64}
  func.return
}
// CHECK: Operation does not verify: expected 'intermediate_bytes' >= 0, got -1

// -----

// view of a packed copy: only a copy holding the values themselves (no zero point)
func.func @f(%x: tensor<1x1x2x2xi32, #cvm.prec<8>>) {
  %p = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 0, 0>, zero_point = 128 : i64} : tensor<1x1x2x2xi32, #cvm.prec<8>> -> tensor<1x2x2x1xui8>
  %v = cvm_sched.view %p {layout = strided<[4, 1, 2, 1]>} : tensor<1x2x2x1xui8> -> tensor<1x1x2x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected a packed copy holding the values themselves (to = "nhwc", no zero point), got to = 'nhwc' with a zero point
