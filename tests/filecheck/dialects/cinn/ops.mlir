// RUN: cvm-opt %s | cvm-opt | filecheck %s
// RUN: cvm-opt %s --print-op-generic | cvm-opt | filecheck %s

// Every cinn op, printed back as written.

// CHECK-LABEL: func.func @all_ops(
func.func @all_ops(%f: tensor<2x3xf32>, %d: tensor<2x3xf64>, %i: tensor<2x3xi32>, %u: tensor<2x3xui8>, %b: tensor<2x3xi1>, %row: tensor<3xf32>, %m: tensor<3x4xf32>, %x: tensor<1x3x8x8xf32>, %xh: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %mean: tensor<3xf32>, %dy: tensor<1x4x4x4xf32>) {
  %c0 = cinn.const_scalar 2.500000e+00 : f32
  // CHECK-NEXT: %c0 = cinn.const_scalar 2.500000e+00 : f32
  %c1 = cinn.const_scalar -3 : i64
  // CHECK-NEXT: %c1 = cinn.const_scalar -3 : i64
  %c2 = cinn.const_scalar true
  // CHECK-NEXT: %c2 = cinn.const_scalar true
  %c3 = cinn.const_scalar 200 : ui8
  // CHECK-NEXT: %c3 = cinn.const_scalar 200 : ui8
  %c4 = cinn.const_scalar 0x7ff0000000000000 : f64
  // CHECK-NEXT: %c4 = cinn.const_scalar 0x7ff0000000000000 : f64
  %acos = cinn.acos %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %acos = cinn.acos %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %acosh = cinn.acosh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %acosh = cinn.acosh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %asin = cinn.asin %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %asin = cinn.asin %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %asinh = cinn.asinh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %asinh = cinn.asinh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %atan = cinn.atan %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %atan = cinn.atan %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %atanh = cinn.atanh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %atanh = cinn.atanh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ceil = cinn.ceil %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %ceil = cinn.ceil %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cos = cinn.cos %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %cos = cinn.cos %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cosh = cinn.cosh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %cosh = cinn.cosh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %erf = cinn.erf %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %erf = cinn.erf %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %exp = cinn.exp %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %exp = cinn.exp %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %floor = cinn.floor %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %floor = cinn.floor %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %log = cinn.log %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %log = cinn.log %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %log10 = cinn.log10 %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %log10 = cinn.log10 %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %log2 = cinn.log2 %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %log2 = cinn.log2 %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %round = cinn.round %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %round = cinn.round %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %rsqrt = cinn.rsqrt %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %rsqrt = cinn.rsqrt %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sin = cinn.sin %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sin = cinn.sin %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sinh = cinn.sinh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sinh = cinn.sinh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sqrt = cinn.sqrt %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sqrt = cinn.sqrt %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %tan = cinn.tan %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %tan = cinn.tan %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %tanh = cinn.tanh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %tanh = cinn.tanh %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %trunc = cinn.trunc %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %trunc = cinn.trunc %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %abs = cinn.abs %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %abs = cinn.abs %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %negative = cinn.negative %d : (tensor<2x3xf64>) -> tensor<2x3xf64>
  // CHECK-NEXT: %negative = cinn.negative %d : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %sign = cinn.sign %u : (tensor<2x3xui8>) -> tensor<2x3xui8>
  // CHECK-NEXT: %sign = cinn.sign %u : (tensor<2x3xui8>) -> tensor<2x3xui8>
  %identity = cinn.identity %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %identity = cinn.identity %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %bitwise_not = cinn.bitwise_not %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %bitwise_not = cinn.bitwise_not %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %is_finite = cinn.is_finite %f : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %is_finite = cinn.is_finite %f : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %is_inf = cinn.is_inf %f : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %is_inf = cinn.is_inf %f : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %is_nan = cinn.is_nan %f : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %is_nan = cinn.is_nan %f : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %logical_not = cinn.logical_not %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %logical_not = cinn.logical_not %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
  %add = cinn.add %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %add = cinn.add %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sub = cinn.sub %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sub = cinn.sub %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mul = cinn.mul %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mul = cinn.mul %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %div = cinn.div %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %div = cinn.div %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mod = cinn.mod %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mod = cinn.mod %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %max = cinn.max %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %max = cinn.max %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %min = cinn.min %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %min = cinn.min %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %power = cinn.power %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %power = cinn.power %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %floor_div = cinn.floor_div %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %floor_div = cinn.floor_div %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %floor_mod = cinn.floor_mod %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %floor_mod = cinn.floor_mod %f, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %bitwise_and = cinn.bitwise_and %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %bitwise_and = cinn.bitwise_and %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %bitwise_or = cinn.bitwise_or %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %bitwise_or = cinn.bitwise_or %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %bitwise_xor = cinn.bitwise_xor %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %bitwise_xor = cinn.bitwise_xor %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %left_shift = cinn.left_shift %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %left_shift = cinn.left_shift %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %right_shift = cinn.right_shift %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %right_shift = cinn.right_shift %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %logical_and = cinn.logical_and %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %logical_and = cinn.logical_and %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %logical_or = cinn.logical_or %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %logical_or = cinn.logical_or %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %logical_xor = cinn.logical_xor %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %logical_xor = cinn.logical_xor %b, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %dot = cinn.dot %f, %m : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %dot = cinn.dot %f, %m : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %dot_vec = cinn.dot %row, %row : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  // CHECK-NEXT: %dot_vec = cinn.dot %row, %row : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %compare_eq = cinn.compare eq %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  // CHECK-NEXT: %compare_eq = cinn.compare eq %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  %compare_ne = cinn.compare ne %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  // CHECK-NEXT: %compare_ne = cinn.compare ne %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  %compare_ge = cinn.compare ge %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  // CHECK-NEXT: %compare_ge = cinn.compare ge %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  %compare_gt = cinn.compare gt %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  // CHECK-NEXT: %compare_gt = cinn.compare gt %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  %compare_le = cinn.compare le %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  // CHECK-NEXT: %compare_le = cinn.compare le %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  %compare_lt = cinn.compare lt %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  // CHECK-NEXT: %compare_lt = cinn.compare lt %u, %u : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  %bias_grad, %scale_grad = cinn.bn_grad_bias_scale %x, %x, %mean : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  // CHECK-NEXT: %bias_grad, %scale_grad = cinn.bn_grad_bias_scale %x, %x, %mean : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %sum, %sum_square = cinn.bn_mean_variance %x : (tensor<1x3x8x8xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  // CHECK-NEXT: %sum, %sum_square = cinn.bn_mean_variance %x : (tensor<1x3x8x8xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %broadcast_to = cinn.broadcast_to %row {out_shape = array<i64: 2, 3, 4>, broadcast_axes = array<i64: 1>} : (tensor<3xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %broadcast_to = cinn.broadcast_to %row {out_shape = array<i64: 2, 3, 4>, broadcast_axes = array<i64: 1>} : (tensor<3xf32>) -> tensor<2x3x4xf32>
  %concat = cinn.concat %f, %f, %f {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x9xf32>
  // CHECK-NEXT: %concat = cinn.concat %f, %f, %f {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x9xf32>
  %conv = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  // CHECK-NEXT: %conv = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %conv_nhwc = cinn.conv forward NHWC SAME %xh, %w {strides = array<i64: 2, 2>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  // CHECK-NEXT: %conv_nhwc = cinn.conv forward NHWC SAME %xh, %w {strides = array<i64: 2, 2>, paddings = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %conv_data = cinn.conv backward_data NCHW EXPLICIT %w, %conv {strides = array<i64: 1, 1>, paddings = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64: 1, 3, 8, 8>} : (tensor<4x3x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x3x8x8xf32>
  // CHECK-NEXT: %conv_data = cinn.conv backward_data NCHW EXPLICIT %w, %conv {strides = array<i64: 1, 1>, paddings = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64: 1, 3, 8, 8>} : (tensor<4x3x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x3x8x8xf32>
  %conv_filter = cinn.conv backward_filter NCHW VALID %x, %dy {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 2, 2>, groups = 1 : i64, output_shape = array<i64: 4, 3, 3, 3>} : (tensor<1x3x8x8xf32>, tensor<1x4x4x4xf32>) -> tensor<4x3x3x3xf32>
  // CHECK-NEXT: %conv_filter = cinn.conv backward_filter NCHW VALID %x, %dy {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 2, 2>, groups = 1 : i64, output_shape = array<i64: 4, 3, 3, 3>} : (tensor<1x3x8x8xf32>, tensor<1x4x4x4xf32>) -> tensor<4x3x3x3xf32>
  %reduce = cinn.reduce sum %f {dim = array<i64: 1>, keep_dim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  // CHECK-NEXT: %reduce = cinn.reduce sum %f {dim = array<i64: 1>, keep_dim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %reduce_all = cinn.reduce max %i {dim = array<i64>, keep_dim = true} : (tensor<2x3xi32>) -> tensor<1x1xi32>
  // CHECK-NEXT: %reduce_all = cinn.reduce max %i {dim = array<i64>, keep_dim = true} : (tensor<2x3xi32>) -> tensor<1x1xi32>
  %reshape = cinn.reshape %f {shape = array<i64: -1, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  // CHECK-NEXT: %reshape = cinn.reshape %f {shape = array<i64: -1, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %reverse = cinn.reverse %f {axis = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %reverse = cinn.reverse %f {axis = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // The decisions of the README's "CINN primitives": negative axes count from the end, a 0 in Reshape copies the
  // input's dim, SAME with dilation > 1 keeps the input's size.
  %concat_neg = cinn.concat %f, %f {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  // CHECK-NEXT: %concat_neg = cinn.concat %f, %f {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %reverse_neg = cinn.reverse %f {axis = array<i64: -2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %reverse_neg = cinn.reverse %f {axis = array<i64: -2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %reduce_neg = cinn.reduce sum %f {dim = array<i64: -1>, keep_dim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  // CHECK-NEXT: %reduce_neg = cinn.reduce sum %f {dim = array<i64: -1>, keep_dim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %reshape_zero = cinn.reshape %x {shape = array<i64: 0, 0, -1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x64xf32>
  // CHECK-NEXT: %reshape_zero = cinn.reshape %x {shape = array<i64: 0, 0, -1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x64xf32>
  %conv_same_dilated = cinn.conv forward NCHW SAME %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 2, 3>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  // CHECK-NEXT: %conv_same_dilated = cinn.conv forward NCHW SAME %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 0, 0>, dilations = array<i64: 2, 3>, groups = 1 : i64, output_shape = array<i64>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %select = cinn.select %b, %f, %c0 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %select = cinn.select %b, %f, %c0 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %slice = cinn.slice %f {axes = array<i64: 1>, starts = array<i64: -2>, ends = array<i64: 100>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  // CHECK-NEXT: %slice = cinn.slice %f {axes = array<i64: 1>, starts = array<i64: -2>, ends = array<i64: 100>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  %transpose = cinn.transpose %f {axis = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  // CHECK-NEXT: %transpose = cinn.transpose %f {axis = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
