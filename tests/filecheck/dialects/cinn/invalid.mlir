// RUN: cvm-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the cinn dialect.

// A float-only primitive on integers
func.func @f(%x: tensor<4xi32>) {
  %0 = cinn.sin %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}
// CHECK: Operation does not verify: expected 'x' element type to be float (f32, f64), got i32

// -----

// An integer-only primitive on floats
func.func @f(%x: tensor<4xf32>) {
  %0 = cinn.left_shift %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'lhs' element type to be integer (i8, i16, i32, i64, ui8), got f32

// -----

// A bitwise primitive on floats
func.func @f(%x: tensor<4xf64>) {
  %0 = cinn.bitwise_and %x, %x : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return
}
// CHECK: Operation does not verify: expected 'lhs' element type to be integer or bool (i8, i16, i32, i64, ui8, i1), got f64

// -----

// Arithmetic on bool
func.func @f(%x: tensor<4xi1>) {
  %0 = cinn.add %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}
// CHECK: Operation does not verify: expected 'lhs' element type to be numeric (f32, f64, i8, i16, i32, i64, ui8), got i1

// -----

// An unsupported element type
func.func @f(%x: tensor<4xf16>) {
  %0 = cinn.identity %x : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}
// CHECK: Operation does not verify: expected 'x' element type to be any (f32, f64, i8, i16, i32, i64, ui8, i1), got f16

// -----

// A dynamic shape
func.func @f(%x: tensor<?xf32>) {
  %0 = cinn.exp %x : (tensor<?xf32>) -> tensor<?xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'x' to have a static shape, got tensor<?xf32>

// -----

// Operands of two element types
func.func @f(%x: tensor<4xf32>, %y: tensor<4xf64>) {
  %0 = cinn.mul %x, %y : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'rhs' element type to equal 'lhs' element type f32, got f64

// -----

// Shapes that do not broadcast
func.func @f(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  %0 = cinn.sub %x, %y : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected broadcastable operand shapes, got [4, 3] and [4]

// -----

// A result type other than the inferred one
func.func @f(%x: tensor<4x3xf32>, %y: tensor<3xf32>) {
  %0 = cinn.max %x, %y : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  func.return
}
// CHECK: Operation does not verify: expected result type tensor<4x3xf32>, got tensor<4x1xf32>

// -----

// A predicate returns i1
func.func @f(%x: tensor<4xf32>) {
  %0 = cinn.is_nan %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected result type tensor<4xi1>, got tensor<4xf32>

// -----

// A constant of an unsupported type
func.func @f() {
  %0 = cinn.const_scalar 1.000000e+00 : f16
  func.return
}
// CHECK: Operation does not verify: expected 'value' element type to be any (f32, f64, i8, i16, i32, i64, ui8, i1), got f16

// -----

// A constant whose result type is not its value's
func.func @f() {
  %0 = "cinn.const_scalar"() <{value = 1 : i32}> : () -> tensor<i64>
  func.return
}
// CHECK: Operation does not verify: expected result type tensor<i32>, got tensor<i64>

// -----

// Dot ranks
func.func @f(%x: tensor<3xf32>, %y: tensor<3x2xf32>) {
  %0 = cinn.dot %x, %y : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: Operation does not verify: expected operand ranks (1, 1), (2, 2) or (2, 1), got (1, 2)

// -----

// Dot contraction sizes
func.func @f(%x: tensor<2x3xf32>, %y: tensor<4x2xf32>) {
  %0 = cinn.dot %x, %y : (tensor<2x3xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'rhs' dim 0 to equal 'lhs' dim 1 (3), got 4

// -----

// Bn_mean_variance rank
func.func @f(%x: tensor<3x8xf32>) {
  %0, %1 = cinn.bn_mean_variance %x : (tensor<3x8xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  func.return
}
// CHECK: Operation does not verify: expected 'x' of rank 4 (NCHW), got rank 2

// -----

// Bn_grad_bias_scale grad shape
func.func @f(%x: tensor<1x3x2x2xf32>, %g: tensor<1x3x2x1xf32>, %m: tensor<3xf32>) {
  %0, %1 = cinn.bn_grad_bias_scale %x, %g, %m : (tensor<1x3x2x2xf32>, tensor<1x3x2x1xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  func.return
}
// CHECK: Operation does not verify: expected 'grad' shape [1, 3, 2, 2], got [1, 3, 2, 1]

// -----

// Bn_grad_bias_scale save_mean shape
func.func @f(%x: tensor<1x3x2x2xf32>, %m: tensor<2xf32>) {
  %0, %1 = cinn.bn_grad_bias_scale %x, %x, %m : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<2xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  func.return
}
// CHECK: Operation does not verify: expected 'save_mean' shape [3], got [2]

// -----

// Bn result types
func.func @f(%x: tensor<1x3x2x2xf32>) {
  %0, %1 = cinn.bn_mean_variance %x : (tensor<1x3x2x2xf32>) -> (tensor<3xf32>, tensor<1xf32>)
  func.return
}
// CHECK: Operation does not verify: expected result 1 type tensor<3xf32>, got tensor<1xf32>

// -----

// Broadcast_to: one axis per input axis
func.func @f(%x: tensor<3xf32>) {
  %0 = cinn.broadcast_to %x {out_shape = array<i64: 2, 3>, broadcast_axes = array<i64: 0, 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'broadcast_axes' to have one entry per input axis (1), got 2

// -----

// Broadcast_to: axis range
func.func @f(%x: tensor<3xf32>) {
  %0 = cinn.broadcast_to %x {out_shape = array<i64: 2, 3>, broadcast_axes = array<i64: 2>} : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'broadcast_axes' in [0, 2), got 2

// -----

// Broadcast_to: repeated axes
func.func @f(%x: tensor<1x1xf32>) {
  %0 = cinn.broadcast_to %x {out_shape = array<i64: 2, 3>, broadcast_axes = array<i64: 1, 1>} : (tensor<1x1xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'broadcast_axes' without repeated axes, got [1, 1]

// -----

// Broadcast_to: mapped dims
func.func @f(%x: tensor<3xf32>) {
  %0 = cinn.broadcast_to %x {out_shape = array<i64: 3, 2>, broadcast_axes = array<i64: 1>} : (tensor<3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: Operation does not verify: expected input dim 0 to be 1 or 2 (output dim 1), got 3

// -----

// Broadcast_to: output dims
func.func @f(%x: tensor<3xf32>) {
  %0 = cinn.broadcast_to %x {out_shape = array<i64: 0, 3>, broadcast_axes = array<i64: 1>} : (tensor<3xf32>) -> tensor<0x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'out_shape' dims >= 1, got [0, 3]

// -----

// Compare element types
func.func @f(%x: tensor<3xi32>, %y: tensor<3xi64>) {
  %0 = cinn.compare eq %x, %y : (tensor<3xi32>, tensor<3xi64>) -> tensor<3xi1>
  func.return
}
// CHECK: Operation does not verify: expected 'rhs' element type to equal 'lhs' element type i32, got i64

// -----

// Concat axis: one past the upper bound
func.func @f(%x: tensor<2x3xf32>) {
  %0 = cinn.concat %x, %x {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [-2, 2), got 2

// -----

// Concat axis: one below the lower bound
func.func @f(%x: tensor<2x3xf32>) {
  %0 = cinn.concat %x, %x {axis = -3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [-2, 2), got -3

// -----

// Concat shapes
func.func @f(%x: tensor<2x3xf32>, %y: tensor<3x3xf32>) {
  %0 = cinn.concat %x, %y {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected input 1 shape to equal input 0 shape [2, 3] except on axis 1, got [3, 3]

// -----

// Concat element types
func.func @f(%x: tensor<2x3xf32>, %y: tensor<2x3xi32>) {
  %0 = cinn.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'input 1' element type to equal 'input 0' element type f32, got i32

// -----

// Concat of nothing
func.func @f() {
  %0 = "cinn.concat"() <{axis = 0 : i64}> : () -> tensor<1xf32>
  func.return
}
// CHECK: Operation does not verify: expected at least one input, got 0

// -----

// Conv strides
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'strides' to be 2 integers >= 1, got [1]

// -----

// Conv: stride and dilation both above 1
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 2, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 2>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'strides' or 'dilations' to be all 1, got strides [2, 1] and dilations [1, 2]

// -----

// Conv groups
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 0 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'groups' >= 1, got 0

// -----

// Conv rank
func.func @f(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'lhs' of rank 4, got rank 3

// -----

// Conv channels and groups
func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64, output_shape = array<i64>} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected input channels 4 and filter dims [4, 3] to satisfy c % groups == 0, o % groups == 0 and filter dim 1 == c / groups with groups 2

// -----

// Conv filter larger than the padded input
func.func @f(%x: tensor<1x3x2x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected the dilated filter [3, 3] to fit the padded input [2, 8]

// -----

// Conv backward_data needs output_shape
func.func @f(%w: tensor<4x3x3x3xf32>, %dy: tensor<1x4x6x6xf32>) {
  %0 = cinn.conv backward_data NCHW EXPLICIT %w, %dy {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<4x3x3x3xf32>, tensor<1x4x6x6xf32>) -> tensor<1x3x8x8xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'output_shape' of 4 dims for conv_type backward_data, got []

// -----

// Conv backward_filter: dy must be the forward output
func.func @f(%x: tensor<1x3x8x8xf32>, %dy: tensor<1x4x8x8xf32>) {
  %0 = cinn.conv backward_filter NCHW EXPLICIT %x, %dy {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64: 4, 3, 3, 3>} : (tensor<1x3x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'rhs' shape [1, 4, 6, 6] (the forward output for 'output_shape'), got [1, 4, 8, 8]

// -----

// Conv forward output_shape
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64: 1, 4, 8, 8>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'output_shape' empty or [1, 4, 6, 6], got [1, 4, 8, 8]

// -----

// Conv is float only
func.func @f(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) {
  %0 = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  func.return
}
// CHECK: Operation does not verify: expected 'lhs' element type to be float (f32, f64), got i32

// -----

// Reduce dim range: [-rank, rank), one below the bound
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reduce sum %x {dim = array<i64: -3>, keep_dim = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'dim' in [-2, 2), got -3

// -----

// Reduce dim range: one past the upper bound
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reduce sum %x {dim = array<i64: 2>, keep_dim = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'dim' in [-2, 2), got 2

// -----

// Reduce dims repeated once normalised
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reduce sum %x {dim = array<i64: 1, -1>, keep_dim = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'dim' without repeated axes, got [1, -1] -> [1, 1]

// -----

// Reduce repeated dims
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reduce prod %x {dim = array<i64: 1, 1>, keep_dim = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'dim' without repeated axes, got [1, 1]

// -----

// Reduce result shape
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reduce min %x {dim = array<i64: 1>, keep_dim = true} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected result type tensor<4x1xf32>, got tensor<4xf32>

// -----

// Reshape with two -1
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reshape %x {shape = array<i64: -1, -1>} : (tensor<4x3xf32>) -> tensor<12xf32>
  func.return
}
// CHECK: Operation does not verify: expected at most one -1 in 'shape', got [-1, -1]

// -----

// Reshape element count
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reshape %x {shape = array<i64: 5, 2>} : (tensor<4x3xf32>) -> tensor<5x2xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'shape' with 12 elements, got [5, 2] (10)

// -----

// Reshape -1 that does not divide
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reshape %x {shape = array<i64: 5, -1>} : (tensor<4x3xf32>) -> tensor<5x2xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'shape' [5, -1] to divide 12 elements

// -----

// Reshape: a 0 copies the input's dim, and the element count must still match
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reshape %x {shape = array<i64: 0, 12>} : (tensor<4x3xf32>) -> tensor<4x12xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'shape' with 12 elements, got [0, 12] -> [4, 12] (48)

// -----

// Reshape: a 0 at an index the input does not have (the input's rank is 2)
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reshape %x {shape = array<i64: 2, 6, 0>} : (tensor<4x3xf32>) -> tensor<2x6x1xf32>
  func.return
}
// CHECK: Operation does not verify: expected a 0 in 'shape' only at an index below the input's rank 2, got index 2

// -----

// Reshape: dims below -1
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reshape %x {shape = array<i64: -2, -6>} : (tensor<4x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'shape' dims >= 0 or -1, got [-2, -6]

// -----

// Reverse axis range: one past the upper bound
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reverse %x {axis = array<i64: 2>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [-2, 2), got 2

// -----

// Reverse axis range: one below the lower bound
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reverse %x {axis = array<i64: -3>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' in [-2, 2), got -3

// -----

// Reverse axes repeated once normalised
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.reverse %x {axis = array<i64: 0, -2>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' without repeated axes, got [0, -2] -> [0, 0]

// -----

// Select condition type
func.func @f(%c: tensor<4xi32>, %x: tensor<4xf32>) {
  %0 = cinn.select %c, %x, %x : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'condition' element type to be bool (i1), got i32

// -----

// Select value types
func.func @f(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf64>) {
  %0 = cinn.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'false_value' element type to equal 'true_value' element type f32, got f64

// -----

// Slice lengths
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.slice %x {axes = array<i64: 0>, starts = array<i64: 0, 1>, ends = array<i64: 2>} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axes', 'starts' and 'ends' of one length, got 1, 2, 1

// -----

// Slice axes
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.slice %x {axes = array<i64: 2>, starts = array<i64: 0>, ends = array<i64: 2>} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axes' in [0, 2), got 2

// -----

// Slice empty range
func.func @f(%x: tensor<4x3xf32>) {
  %0 = cinn.slice %x {axes = array<i64: 0>, starts = array<i64: 3>, ends = array<i64: -2>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
  func.return
}
// CHECK: Operation does not verify: expected a non-empty range on axis 0 (dim 4), got [3, -2) -> [3, 2)

// -----

// Transpose permutation
func.func @f(%x: tensor<4x3x2xf32>) {
  %0 = cinn.transpose %x {axis = array<i64: 1, 0>} : (tensor<4x3x2xf32>) -> tensor<3x4xf32>
  func.return
}
// CHECK: Operation does not verify: expected 'axis' to be a permutation of [0, 3), got [1, 0]
