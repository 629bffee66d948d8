// RUN: cvm-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per rule of the CVM operators (spec/cvm-runtime.md, sections 1 and 2) and of the verifiers.

// conv2d: the weight shape must match channels, in_channels / groups and kernel_size
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %w: tensor<4x2x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, use_bias = false} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<4x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<20>>
  func.return
}
// CHECK: Operation does not verify: undefined in cvm-runtime: expected weight shape [4, 4, 3, 3] (channels, in_channels / groups, kernel_size), or 4 rows of at least 4 channels whose kernel size gives the output's, got [4, 2, 3, 3]

// -----

// conv2d: strides in [1, 4096]
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %w: tensor<4x4x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, strides = array<i64: 0, 1>, use_bias = false} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<4x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<22>>
  func.return
}
// CHECK: Operation does not verify: expected 'strides' in [1, 4096], got 0

// -----

// conv2d: padding in [0, 4096]
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %w: tensor<4x4x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: -1, 0>, use_bias = false} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<4x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<22>>
  func.return
}
// CHECK: Operation does not verify: expected 'padding' in [0, 4096], got -1

// -----

// conv2d: input channels divisible by groups
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %w: tensor<6x2x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 6 : i64, kernel_size = array<i64: 3, 3>, groups = 3 : i64, use_bias = false} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<6x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x6x6x6xi32, #cvm.prec<21>>
  func.return
}
// CHECK: Operation does not verify: expected 'groups' 3 > 0 dividing the input channels 4 and 'channels' 6

// -----

// conv2d: NCHW layout only
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %w: tensor<4x4x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, layout = "NHWC", use_bias = false} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<4x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<22>>
  func.return
}
// CHECK: Operation does not verify: expected 'layout' NCHW, got NHWC

// -----

// conv2d: the dilated kernel must fit the padded input
func.func @f(%x: tensor<1x4x4x4xi32, #cvm.prec<8>>, %w: tensor<4x4x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, dilation = array<i64: 2, 2>, use_bias = false} : (tensor<1x4x4x4xi32, #cvm.prec<8>>, tensor<4x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x1x1xi32, #cvm.prec<22>>
  func.return
}
// CHECK: Operation does not verify: dilated kernel height 5 exceeds padded input height 4

// -----

// conv2d: data precision <= 8
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<9>>, %w: tensor<4x4x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, use_bias = false} : (tensor<1x4x8x8xi32, #cvm.prec<9>>, tensor<4x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<23>>
  func.return
}
// CHECK: Operation does not verify: expected data precision <= 8, got 9

// -----

// conv2d: the bias has one value per output channel
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %w: tensor<4x4x3x3xi32, #cvm.prec<8>>, %b: tensor<5xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w, %b {channels = 4 : i64, kernel_size = array<i64: 3, 3>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<4x4x3x3xi32, #cvm.prec<8>>, tensor<5xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<23>>
  func.return
}
// CHECK: Operation does not verify: expected bias shape [4], got [5]

// -----

// conv2d: use_bias (true by default) needs the bias operand
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>, %w: tensor<4x4x3x3xi32, #cvm.prec<8>>) {
  %0 = cvm.conv2d %x, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<4x4x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x6x6xi32, #cvm.prec<22>>
  func.return
}
// CHECK: Operation does not verify: expected 3 inputs, got 2

// -----

// dense: the weight shape must be (units, K)
func.func @f(%x: tensor<2x16xi32, #cvm.prec<8>>, %w: tensor<10x16xi32, #cvm.prec<8>>) {
  %0 = cvm.dense %x, %w {units = 8 : i64, use_bias = false} : (tensor<2x16xi32, #cvm.prec<8>>, tensor<10x16xi32, #cvm.prec<8>>) -> tensor<2x8xi32, #cvm.prec<21>>
  func.return
}
// CHECK: Operation does not verify: expected weight shape [8, 16], got [10, 16]

// -----

// dense: weight precision <= 8
func.func @f(%x: tensor<2x16xi32, #cvm.prec<8>>, %w: tensor<10x16xi32, #cvm.prec<12>>) {
  %0 = cvm.dense %x, %w {units = 10 : i64, use_bias = false} : (tensor<2x16xi32, #cvm.prec<8>>, tensor<10x16xi32, #cvm.prec<12>>) -> tensor<2x10xi32, #cvm.prec<25>>
  func.return
}
// CHECK: Operation does not verify: expected weight precision <= 8, got 12

// -----

// max_pool2d: padding smaller than pool_size
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm.max_pool2d %x {pool_size = array<i64: 2, 2>, padding = array<i64: 2>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x11x11xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'padding' [2, 2] smaller than 'pool_size' [2, 2]

// -----

// max_pool2d: in ceil mode the last window starts inside the input
func.func @f(%x: tensor<1x1x1x1xi32, #cvm.prec<8>>) {
  %0 = cvm.max_pool2d %x {pool_size = array<i64: 2, 2>, padding = array<i64: 1, 1>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x1x1x1xi32, #cvm.prec<8>>) -> tensor<1x1x2x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: in ceil mode the last pooling window starts inside the padding

// -----

// upsampling: scale in [1, 4096]
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm.upsampling %x {scale = 0 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'scale' in [1, 4096], got 0

// -----

// upsampling: NEAREST_NEIGHBOR only
func.func @f(%x: tensor<1x4x8x8xi32, #cvm.prec<8>>) {
  %0 = cvm.upsampling %x {scale = 2 : i64, method = "BILINEAR"} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x16x16xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'method' NEAREST_NEIGHBOR, got BILINEAR

// -----

// get_valid_counts: 2 <= K < 32
func.func @f(%x: tensor<1x4x32xi32, #cvm.prec<8>>) {
  %0, %1 = cvm.get_valid_counts %x : (tensor<1x4x32xi32, #cvm.prec<8>>) -> (tensor<1xi32, #cvm.prec<9>>, tensor<1x4x32xi32, #cvm.prec<8>>)
  func.return
}
// CHECK: Operation does not verify: expected data.shape[2] in [2, 31], got 32

// -----

// non_max_suppression: rows of 6 values
func.func @f(%x: tensor<1x4x5xi32, #cvm.prec<8>>, %n: tensor<1xi32, #cvm.prec<8>>) {
  %0 = cvm.non_max_suppression %x, %n : (tensor<1x4x5xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<8>>) -> tensor<1x4x5xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected data.shape[2] == 6, got 5

// -----

// non_max_suppression: iou_threshold > 0
func.func @f(%x: tensor<1x4x6xi32, #cvm.prec<8>>, %n: tensor<1xi32, #cvm.prec<8>>) {
  %0 = cvm.non_max_suppression %x, %n {iou_threshold = 0 : i64} : (tensor<1x4x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<8>>) -> tensor<1x4x6xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'iou_threshold' > 0, got 0

// -----

// non_max_suppression: one valid count per batch
func.func @f(%x: tensor<2x4x6xi32, #cvm.prec<8>>, %n: tensor<1xi32, #cvm.prec<8>>) {
  %0 = cvm.non_max_suppression %x, %n : (tensor<2x4x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<8>>) -> tensor<2x4x6xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected valid_count shape [2], got [1]

// -----

// non_max_suppression: only the documented layout (coord_start 2)
func.func @f(%x: tensor<1x4x6xi32, #cvm.prec<8>>, %n: tensor<1xi32, #cvm.prec<8>>) {
  %0 = cvm.non_max_suppression %x, %n {coord_start = 1 : i64} : (tensor<1x4x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<8>>) -> tensor<1x4x6xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'coord_start' == 2, got 1

// -----

// non_max_suppression: return_indices false only
func.func @f(%x: tensor<1x4x6xi32, #cvm.prec<8>>, %n: tensor<1xi32, #cvm.prec<8>>) {
  %0 = cvm.non_max_suppression %x, %n {return_indices = true} : (tensor<1x4x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<8>>) -> tensor<1x4x6xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'return_indices' false, got true

// -----

// elemwise_add: operands of the same shape
func.func @f(%a: tensor<4xi32, #cvm.prec<8>>, %b: tensor<3xi32, #cvm.prec<8>>) {
  %0 = cvm.elemwise_add %a, %b : (tensor<4xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>>
  func.return
}
// CHECK: Operation does not verify: expected operands of the same shape, got [4] and [3]

// -----

// clip: a_min < a_max
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>) {
  %0 = cvm.clip %x {a_min = 5 : i64, a_max = 5 : i64} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<4>>
  func.return
}
// CHECK: Operation does not verify: expected 'a_min' < 'a_max', got 5 and 5

// -----

// cvm_clip: precision in [1, 32]
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>) {
  %0 = cvm.cvm_clip %x {precision = 33 : i64} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'precision' in [1, 32], got 33

// -----

// cvm_right_shift: shift_bit in [1, 32]
func.func @f(%x: tensor<4xi32, #cvm.prec<16>>) {
  %0 = cvm.cvm_right_shift %x {precision = 8 : i64, shift_bit = 0 : i64} : (tensor<4xi32, #cvm.prec<16>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'shift_bit' in [1, 32], got 0

// -----

// cvm_left_shift: input precision + shift_bit <= 32
func.func @f(%x: tensor<4xi32, #cvm.prec<16>>) {
  %0 = cvm.cvm_left_shift %x {precision = 32 : i64, shift_bit = 17 : i64} : (tensor<4xi32, #cvm.prec<16>>) -> tensor<4xi32, #cvm.prec<32>>
  func.return
}
// CHECK: Operation does not verify: input precision 16 plus 'shift_bit' 17 exceeds 32

// -----

// repeat: repeats > 0
func.func @f(%x: tensor<3x2xi32, #cvm.prec<8>>) {
  %0 = cvm.repeat %x {repeats = 0 : i64} : (tensor<3x2xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'repeats' > 0, got 0

// -----

// repeat: axis within the rank
func.func @f(%x: tensor<3x2xi32, #cvm.prec<8>>) {
  %0 = cvm.repeat %x {repeats = 2 : i64, axis = 2 : i64} : (tensor<3x2xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [-2, 1], got 2

// -----

// tile: reps in [1, 4096]
func.func @f(%x: tensor<3x2xi32, #cvm.prec<8>>) {
  %0 = cvm.tile %x {reps = array<i64: 0, 1>} : (tensor<3x2xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'reps' in [1, 4096], got 0

// -----

// concatenate: inputs equal except on the axis
func.func @f(%a: tensor<2x3xi32, #cvm.prec<8>>, %b: tensor<2x4xi32, #cvm.prec<8>>) {
  %0 = cvm.concatenate %a, %b {axis = 0 : i64} : (tensor<2x3xi32, #cvm.prec<8>>, tensor<2x4xi32, #cvm.prec<8>>) -> tensor<4x3xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected inputs equal except on axis 0, got [2, 3] and [2, 4]

// -----

// expand_dims: axis in [-n-1, n]
func.func @f(%x: tensor<3x2xi32, #cvm.prec<8>>) {
  %0 = cvm.expand_dims %x {axis = 3 : i64} : (tensor<3x2xi32, #cvm.prec<8>>) -> tensor<3x2x1xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [-3, 2], got 3

// -----

// reshape: the element count is kept
func.func @f(%x: tensor<2x6xi32, #cvm.prec<8>>) {
  %0 = cvm.reshape %x {shape = array<i64: 5, 2>} : (tensor<2x6xi32, #cvm.prec<8>>) -> tensor<5x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: 'shape' [5, 2] gives [5, 2]: 10 elements, expected 12

// -----

// squeeze: squeezed dims are 1
func.func @f(%x: tensor<1x4xi32, #cvm.prec<8>>) {
  %0 = cvm.squeeze %x {axis = array<i64: 1>} : (tensor<1x4xi32, #cvm.prec<8>>) -> tensor<1xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected dim 1 of size 1 to squeeze, got 4

// -----

// transpose: axes form a permutation
func.func @f(%x: tensor<2x3xi32, #cvm.prec<8>>) {
  %0 = cvm.transpose %x {axes = array<i64: 0, 0>} : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<2x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'axes' to be a permutation, got [0, 0]

// -----

// strided_slice: a non-empty range
func.func @f(%x: tensor<4x2xi32, #cvm.prec<8>>) {
  %0 = cvm.strided_slice %x {begin = array<i64: 3>, end = array<i64: 1>} : (tensor<4x2xi32, #cvm.prec<8>>) -> tensor<2x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected a non-empty range on axis 0, got begin 3, end 1, stride 1

// -----

// strided_slice: stride != 0
func.func @f(%x: tensor<4x2xi32, #cvm.prec<8>>) {
  %0 = cvm.strided_slice %x {begin = array<i64: 0>, end = array<i64: 4>, stride = array<i64: 0>} : (tensor<4x2xi32, #cvm.prec<8>>) -> tensor<4x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'stride' values != 0, got 0 at axis 0

// -----

// take: axis within the rank
func.func @f(%x: tensor<5x2xi32, #cvm.prec<8>>, %i: tensor<3xi32, #cvm.prec<8>>) {
  %0 = cvm.take %x, %i {axis = 2 : i64} : (tensor<5x2xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<8>>) -> tensor<3xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [-2, 1], got 2

// -----

// cvm_lut: in_dim equals the table size
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>, %t: tensor<16xi32, #cvm.prec<8>>) {
  %0 = cvm.cvm_lut %x, %t {in_dim = 8 : i64} : (tensor<4xi32, #cvm.prec<8>>, tensor<16xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'in_dim' equal to the table size 16, got 8

// -----

// slice_like: shape_like no larger than data
func.func @f(%x: tensor<2x2xi32, #cvm.prec<8>>, %s: tensor<3x2xi32, #cvm.prec<8>>) {
  %0 = cvm.slice_like %x, %s : (tensor<2x2xi32, #cvm.prec<8>>, tensor<3x2xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected shape_like dim 0 <= 2, got 3

// -----

// where: x and y of the same shape
func.func @f(%c: tensor<4xi32, #cvm.prec<8>>, %x: tensor<4xi32, #cvm.prec<8>>, %y: tensor<3xi32, #cvm.prec<8>>) {
  %0 = cvm.where %c, %x, %y : (tensor<4xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected x and y of the same shape, got [4] and [3]

// -----

// where: a condition of the shape of x, or one value per row
func.func @f(%c: tensor<3xi32, #cvm.prec<8>>, %x: tensor<4x3xi32, #cvm.prec<8>>, %y: tensor<4x3xi32, #cvm.prec<8>>) {
  %0 = cvm.where %c, %x, %y : (tensor<3xi32, #cvm.prec<8>>, tensor<4x3xi32, #cvm.prec<8>>, tensor<4x3xi32, #cvm.prec<8>>) -> tensor<4x3xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected condition of shape [4, 3] or [4], got [3]

// -----

// sum: distinct axes
func.func @f(%x: tensor<2x3xi32, #cvm.prec<8>>) {
  %0 = cvm.sum %x {axis = array<i64: 1, -1>} : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<2xi32, #cvm.prec<10>>
  func.return
}
// CHECK: Operation does not verify: expected distinct 'axis' values, got [1, -1]

// -----

// max: axes within the rank
func.func @f(%x: tensor<2x3xi32, #cvm.prec<8>>) {
  %0 = cvm.max %x {axis = array<i64: 2>} : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [0, 1], got 2

// -----

// broadcast_add: shapes that broadcast
func.func @f(%a: tensor<2x3xi32, #cvm.prec<8>>, %b: tensor<2xi32, #cvm.prec<8>>) {
  %0 = cvm.broadcast_add %a, %b : (tensor<2x3xi32, #cvm.prec<8>>, tensor<2xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<9>>
  func.return
}
// CHECK: Operation does not verify: shapes [2, 3] and [2] cannot be broadcast together

// -----

// precision: an inferred precision above 32 rejects the model
func.func @f(%a: tensor<4xi32, #cvm.prec<20>>, %b: tensor<4xi32, #cvm.prec<20>>) {
  %0 = cvm.broadcast_mul %a, %b : (tensor<4xi32, #cvm.prec<20>>, tensor<4xi32, #cvm.prec<20>>) -> tensor<4xi32, #cvm.prec<32>>
  func.return
}
// CHECK: Operation does not verify: output precision would be 40, expected at most 32

// -----

// result type: the written shape must be the inferred one
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>) {
  %0 = cvm.relu %x : (tensor<4xi32, #cvm.prec<8>>) -> tensor<5xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected result 0 of shape [4], got [5]

// -----

// result type: the written precision must be the inferred one
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>) {
  %0 = cvm.relu %x : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>>
  func.return
}
// CHECK: Operation does not verify: expected result 0 of precision 8, got 9

// -----

// attributes: an unknown (misspelt) attribute
func.func @f(%x: tensor<3x2xi32, #cvm.prec<8>>) {
  %0 = cvm.repeat %x {repeats = 2 : i64, axes = 1 : i64} : (tensor<3x2xi32, #cvm.prec<8>>) -> tensor<6x2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: unknown attribute 'axes', expected one of ['repeats', 'axis', 'cvm.gas']

// -----

// cvm.param: values within the precision
func.func @f() {
  %0 = cvm.param "w" dense<[1, 128]> : tensor<2xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected values of precision 8 (|x| <= 127), got 128 at index 1

// -----

// #cvm.prec: precision in [1, 32]
func.func @f(%x: tensor<4xi32, #cvm.prec<0>>) {
  func.return
}
// CHECK: expected 'precision' in [1, 32], got 0

// -----

// Only the declared pass attributes: a dotted name is no escape
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>) {
  %0 = cvm.relu %x {cvm.group = 0 : i64} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: unknown attribute 'cvm.group', expected one of ['cvm.gas']

// -----

// A pass attribute holds what it declares: a gas >= 0 (0 is its bound: ops.mlir)
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>) {
  %0 = cvm.relu %x {cvm.gas = -1 : i64} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: expected 'cvm.gas' to be an integer: the operator's gas (`cvm-gas`) (non-negative), got -1 : i64

// -----

// Arena offsets are no attribute: buffers are placed by cvm-bufferize, in the host it writes
func.func @f(%x: tensor<4xi32, #cvm.prec<8>>) {
  %0 = cvm.relu %x {cvm.offset = 0 : i64} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return
}
// CHECK: Operation does not verify: unknown attribute 'cvm.offset', expected one of ['cvm.gas']
