// RUN: cvm-opt %s | cvm-opt | filecheck %s
// RUN: cvm-opt %s --print-op-generic | cvm-opt | filecheck %s

// Every cvm op (and cvm.param), printed back as written: required and non-default attributes, the
// optional bias, variadic inputs, two results, a node name, and an attribute spelled at its default value.

// CHECK-LABEL: func.func @all_ops(
func.func @all_ops(%data: tensor<1x3x8x8xi32, #cvm.prec<8>>) {
  %w = cvm.param "w" dense<1> : tensor<4x3x3x3xi32, #cvm.prec<8>>
  // CHECK-NEXT: %w = cvm.param "w" dense<1> : tensor<4x3x3x3xi32, #cvm.prec<8>>
  %bias = cvm.param "bias" dense<[1, -2, 3, -4]> : tensor<4xi32, #cvm.prec<8>>
  // CHECK-NEXT: %bias = cvm.param "bias" dense<[1, -2, 3, -4]> : tensor<4xi32, #cvm.prec<8>>
  %conv2d = cvm.conv2d %data, %w, %bias {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<22>>
  // CHECK-NEXT: %conv2d = cvm.conv2d %data, %w, %bias {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<22>>
  %conv2d_1 = cvm.conv2d %data, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilation = array<i64: 1, 1>, use_bias = false} : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x3x3xi32, #cvm.prec<21>>
  // CHECK-NEXT: %conv2d_1 = cvm.conv2d %data, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilation = array<i64: 1, 1>, use_bias = false} : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>) -> tensor<1x4x3x3xi32, #cvm.prec<21>>
  %cvm_right_shift = cvm.cvm_right_shift %conv2d {precision = 8 : i64, shift_bit = 7 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<22>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %cvm_right_shift = cvm.cvm_right_shift %conv2d {precision = 8 : i64, shift_bit = 7 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<22>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %cvm_left_shift = cvm.cvm_left_shift %cvm_right_shift {precision = 12 : i64, is_sign = false, shift_bit = 4 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<12>>
  // CHECK-NEXT: %cvm_left_shift = cvm.cvm_left_shift %cvm_right_shift {precision = 12 : i64, is_sign = false, shift_bit = 4 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<12>>
  %relu = cvm.relu %cvm_right_shift {name = "relu_5"} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %relu = cvm.relu %cvm_right_shift {name = "relu_5"} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %max_pool2d = cvm.max_pool2d %cvm_right_shift {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x4x4xi32, #cvm.prec<8>>
  // CHECK-NEXT: %max_pool2d = cvm.max_pool2d %cvm_right_shift {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x4x4xi32, #cvm.prec<8>>
  %upsampling = cvm.upsampling %cvm_right_shift {scale = 2 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x16x16xi32, #cvm.prec<8>>
  // CHECK-NEXT: %upsampling = cvm.upsampling %cvm_right_shift {scale = 2 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x16x16xi32, #cvm.prec<8>>
  %flatten = cvm.flatten %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x256xi32, #cvm.prec<8>>
  // CHECK-NEXT: %flatten = cvm.flatten %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x256xi32, #cvm.prec<8>>
  %wd = cvm.param "wd" dense<-1> : tensor<10x256xi32, #cvm.prec<2>>
  // CHECK-NEXT: %wd = cvm.param "wd" dense<-1> : tensor<10x256xi32, #cvm.prec<2>>
  %dense = cvm.dense %flatten, %wd {units = 10 : i64, use_bias = false} : (tensor<1x256xi32, #cvm.prec<8>>, tensor<10x256xi32, #cvm.prec<2>>) -> tensor<1x10xi32, #cvm.prec<19>>
  // CHECK-NEXT: %dense = cvm.dense %flatten, %wd {units = 10 : i64, use_bias = false} : (tensor<1x256xi32, #cvm.prec<8>>, tensor<10x256xi32, #cvm.prec<2>>) -> tensor<1x10xi32, #cvm.prec<19>>
  %reshape = cvm.reshape %cvm_right_shift {shape = array<i64: 1, 32, 8>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x32x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %reshape = cvm.reshape %cvm_right_shift {shape = array<i64: 1, 32, 8>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x32x8xi32, #cvm.prec<8>>
  %0, %1 = cvm.get_valid_counts %reshape {score_threshold = 50 : i64} : (tensor<1x32x8xi32, #cvm.prec<8>>) -> (tensor<1xi32, #cvm.prec<10>>, tensor<1x32x8xi32, #cvm.prec<8>>)
  // CHECK-NEXT: %0, %1 = cvm.get_valid_counts %reshape {score_threshold = 50 : i64} : (tensor<1x32x8xi32, #cvm.prec<8>>) -> (tensor<1xi32, #cvm.prec<10>>, tensor<1x32x8xi32, #cvm.prec<8>>)
  %strided_slice = cvm.strided_slice %1 {begin = array<i64: 0, 0, 0>, end = array<i64: 1, 32, 6>} : (tensor<1x32x8xi32, #cvm.prec<8>>) -> tensor<1x32x6xi32, #cvm.prec<8>>
  // CHECK-NEXT: %strided_slice = cvm.strided_slice %1 {begin = array<i64: 0, 0, 0>, end = array<i64: 1, 32, 6>} : (tensor<1x32x8xi32, #cvm.prec<8>>) -> tensor<1x32x6xi32, #cvm.prec<8>>
  %non_max_suppression = cvm.non_max_suppression %strided_slice, %0 {iou_threshold = 40 : i64, force_suppress = true, top_k = 10 : i64, max_output_size = 5 : i64} : (tensor<1x32x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1x32x6xi32, #cvm.prec<8>>
  // CHECK-NEXT: %non_max_suppression = cvm.non_max_suppression %strided_slice, %0 {iou_threshold = 40 : i64, force_suppress = true, top_k = 10 : i64, max_output_size = 5 : i64} : (tensor<1x32x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1x32x6xi32, #cvm.prec<8>>
  %abs = cvm.abs %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %abs = cvm.abs %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %negative = cvm.negative %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %negative = cvm.negative %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %cvm_precision = cvm.cvm_precision %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<6>>
  // CHECK-NEXT: %cvm_precision = cvm.cvm_precision %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<6>>
  %elemwise_add = cvm.elemwise_add %cvm_right_shift, %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  // CHECK-NEXT: %elemwise_add = cvm.elemwise_add %cvm_right_shift, %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  %elemwise_sub = cvm.elemwise_sub %cvm_right_shift, %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  // CHECK-NEXT: %elemwise_sub = cvm.elemwise_sub %cvm_right_shift, %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  %clip = cvm.clip %cvm_right_shift {a_min = -100 : i64, a_max = 100 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %clip = cvm.clip %cvm_right_shift {a_min = -100 : i64, a_max = 100 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %cvm_clip = cvm.cvm_clip %conv2d {precision = 6 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<22>>) -> tensor<1x4x8x8xi32, #cvm.prec<6>>
  // CHECK-NEXT: %cvm_clip = cvm.cvm_clip %conv2d {precision = 6 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<22>>) -> tensor<1x4x8x8xi32, #cvm.prec<6>>
  %repeat = cvm.repeat %flatten {repeats = 2 : i64, axis = 1 : i64} : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<1x512xi32, #cvm.prec<8>>
  // CHECK-NEXT: %repeat = cvm.repeat %flatten {repeats = 2 : i64, axis = 1 : i64} : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<1x512xi32, #cvm.prec<8>>
  %tile = cvm.tile %flatten {reps = array<i64: 2, 1>} : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<2x256xi32, #cvm.prec<8>>
  // CHECK-NEXT: %tile = cvm.tile %flatten {reps = array<i64: 2, 1>} : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<2x256xi32, #cvm.prec<8>>
  %concatenate = cvm.concatenate %cvm_right_shift, %cvm_right_shift {axis = 0 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<2x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %concatenate = cvm.concatenate %cvm_right_shift, %cvm_right_shift {axis = 0 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<2x4x8x8xi32, #cvm.prec<8>>
  %expand_dims = cvm.expand_dims %cvm_right_shift {axis = -1 : i64, num_newaxis = 2 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8x1x1xi32, #cvm.prec<8>>
  // CHECK-NEXT: %expand_dims = cvm.expand_dims %cvm_right_shift {axis = -1 : i64, num_newaxis = 2 : i64} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8x1x1xi32, #cvm.prec<8>>
  %expand_dims_1 = cvm.expand_dims %flatten {axis = 0 : i64} : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<1x1x256xi32, #cvm.prec<8>>
  // CHECK-NEXT: %expand_dims_1 = cvm.expand_dims %flatten {axis = 0 : i64} : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<1x1x256xi32, #cvm.prec<8>>
  %squeeze = cvm.squeeze %expand_dims_1 {axis = array<i64: 0>} : (tensor<1x1x256xi32, #cvm.prec<8>>) -> tensor<1x256xi32, #cvm.prec<8>>
  // CHECK-NEXT: %squeeze = cvm.squeeze %expand_dims_1 {axis = array<i64: 0>} : (tensor<1x1x256xi32, #cvm.prec<8>>) -> tensor<1x256xi32, #cvm.prec<8>>
  %transpose = cvm.transpose %cvm_right_shift {axes = array<i64: 0, 2, 3, 1>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x8x8x4xi32, #cvm.prec<8>>
  // CHECK-NEXT: %transpose = cvm.transpose %cvm_right_shift {axes = array<i64: 0, 2, 3, 1>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x8x8x4xi32, #cvm.prec<8>>
  %transpose_1 = cvm.transpose %flatten : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<256x1xi32, #cvm.prec<8>>
  // CHECK-NEXT: %transpose_1 = cvm.transpose %flatten : (tensor<1x256xi32, #cvm.prec<8>>) -> tensor<256x1xi32, #cvm.prec<8>>
  %take = cvm.take %flatten, %0 : (tensor<1x256xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1xi32, #cvm.prec<8>>
  // CHECK-NEXT: %take = cvm.take %flatten, %0 : (tensor<1x256xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1xi32, #cvm.prec<8>>
  %take_1 = cvm.take %flatten, %0 {axis = 1 : i64} : (tensor<1x256xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1x1xi32, #cvm.prec<8>>
  // CHECK-NEXT: %take_1 = cvm.take %flatten, %0 {axis = 1 : i64} : (tensor<1x256xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1x1xi32, #cvm.prec<8>>
  %table = cvm.param "table" dense<[-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7]> : tensor<16xi32, #cvm.prec<5>>
  // CHECK-NEXT: %table = cvm.param "table" dense<[-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7]> : tensor<16xi32, #cvm.prec<5>>
  %cvm_lut = cvm.cvm_lut %0, %table {in_dim = 16 : i64} : (tensor<1xi32, #cvm.prec<10>>, tensor<16xi32, #cvm.prec<5>>) -> tensor<1xi32, #cvm.prec<5>>
  // CHECK-NEXT: %cvm_lut = cvm.cvm_lut %0, %table {in_dim = 16 : i64} : (tensor<1xi32, #cvm.prec<10>>, tensor<16xi32, #cvm.prec<5>>) -> tensor<1xi32, #cvm.prec<5>>
  %slice_like = cvm.slice_like %cvm_right_shift, %0 {axis = array<i64: 0>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %slice_like = cvm.slice_like %cvm_right_shift, %0 {axis = array<i64: 0>} : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<10>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %where = cvm.where %cvm_right_shift, %cvm_right_shift, %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %where = cvm.where %cvm_right_shift, %cvm_right_shift, %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %sum = cvm.sum %cvm_right_shift {axis = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x1x1xi32, #cvm.prec<15>>
  // CHECK-NEXT: %sum = cvm.sum %cvm_right_shift {axis = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x1x1xi32, #cvm.prec<15>>
  %max = cvm.max %cvm_right_shift {axis = array<i64: 1>, exclude = true} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  // CHECK-NEXT: %max = cvm.max %cvm_right_shift {axis = array<i64: 1>, exclude = true} : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  %sum_1 = cvm.sum %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1xi32, #cvm.prec<17>>
  // CHECK-NEXT: %sum_1 = cvm.sum %cvm_right_shift : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1xi32, #cvm.prec<17>>
  %row = cvm.param "row" {cvm.gas = 40 : i64} dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xi32, #cvm.prec<5>>
  // CHECK-NEXT: %row = cvm.param "row" {cvm.gas = 40 : i64} dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xi32, #cvm.prec<5>>
  %broadcast_add = cvm.broadcast_add %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  // CHECK-NEXT: %broadcast_add = cvm.broadcast_add %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  %broadcast_sub = cvm.broadcast_sub %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  // CHECK-NEXT: %broadcast_sub = cvm.broadcast_sub %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<9>>
  %broadcast_mul = cvm.broadcast_mul %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<13>>
  // CHECK-NEXT: %broadcast_mul = cvm.broadcast_mul %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<13>>
  %broadcast_max = cvm.broadcast_max %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %broadcast_max = cvm.broadcast_max %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %broadcast_div = cvm.broadcast_div %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %broadcast_div = cvm.broadcast_div %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  %broadcast_greater = cvm.broadcast_greater %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  // CHECK-NEXT: %broadcast_greater = cvm.broadcast_greater %cvm_right_shift, %row : (tensor<1x4x8x8xi32, #cvm.prec<8>>, tensor<8xi32, #cvm.prec<5>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>
  func.return
  // CHECK-NEXT: func.return
}

// The pass attributes at their bounds: a gas of 0.
func.func @pass_attributes(%x: tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>> {
  %0 = cvm.relu %x {cvm.gas = 0 : i64} : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return %0 : tensor<4xi32, #cvm.prec<8>>
}
// CHECK-LABEL: func.func @pass_attributes
// CHECK-NEXT:    %0 = cvm.relu %x {cvm.gas = 0 : i64}
