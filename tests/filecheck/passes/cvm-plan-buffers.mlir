// RUN: cvm-opt %s -p cvm-plan-buffers --split-input-file --verify-diagnostics | filecheck %s

// Three kernels, each writing one buffer: %a lives until the sum has read it, %c from the tile on. Their
// lifetimes do not overlap, so they share offset 0; %b is live with both and goes after them.

func.func @main(%data: tensor<4x16xi32, #cvm.prec<8>>) -> tensor<64xi32, #cvm.prec<11>> {
  %a = cvm.relu %data : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.sum %a {axis = array<i64: 0>} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<16xi32, #cvm.prec<11>>
  %c = cvm.tile %b {reps = array<i64: 4>} : (tensor<16xi32, #cvm.prec<11>>) -> tensor<64xi32, #cvm.prec<11>>
  func.return %c : tensor<64xi32, #cvm.prec<11>>
}

// CHECK-LABEL: func.func @main
// CHECK-SAME:      attributes {cvm.arena_bytes = 320 : i64}
// CHECK-NEXT:    %a = cvm.relu %data {cvm.offset = 0 : i64}
// CHECK-NEXT:    %b = cvm.sum %a {cvm.offset = 256 : i64, axis = array<i64: 0>}
// CHECK-NEXT:    %c = cvm.tile %b {cvm.offset = 0 : i64, reps = array<i64: 4>}

// -----

// A fused group writes one buffer, recorded on its last member (%r). A conv2d packs its input into the arena
// (zero-padded NHWC int16, 1x6x6x2: 144 bytes) while its param weight is packed when compiling: no offset. The
// dense packs both operands, its weight being an op's output, just before it runs: the weight's pack takes the
// bytes of %r, which the input's pack has read; the dense's output those of %n. Views (the flatten) and the
// input own no buffer.

func.func @main(%data: tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2xi32, #cvm.prec<8>> {
  %w = cvm.param "w" dense<1> : tensor<2x2x3x3xi32, #cvm.prec<8>>
  %c = cvm.conv2d %data, %w {channels = 2 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, use_bias = false} : (tensor<1x2x4x4xi32, #cvm.prec<8>>, tensor<2x2x3x3xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<21>>
  %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 8 : i64} : (tensor<1x2x4x4xi32, #cvm.prec<21>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %r = cvm.relu %s : (tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x2x4x4xi32, #cvm.prec<8>>
  %f = cvm.flatten %r : (tensor<1x2x4x4xi32, #cvm.prec<8>>) -> tensor<1x32xi32, #cvm.prec<8>>
  %u = cvm.param "u" dense<1> : tensor<2x32xi32, #cvm.prec<8>>
  %n = cvm.negative %u : (tensor<2x32xi32, #cvm.prec<8>>) -> tensor<2x32xi32, #cvm.prec<8>>
  %d = cvm.dense %f, %n {units = 2 : i64, use_bias = false} : (tensor<1x32xi32, #cvm.prec<8>>, tensor<2x32xi32, #cvm.prec<8>>) -> tensor<1x2xi32, #cvm.prec<22>>
  %y = cvm.cvm_right_shift %d {precision = 8 : i64, shift_bit = 14 : i64} : (tensor<1x2xi32, #cvm.prec<22>>) -> tensor<1x2xi32, #cvm.prec<8>>
  func.return %y : tensor<1x2xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK-SAME:      attributes {cvm.arena_bytes = 448 : i64}
// CHECK:         %c = cvm.conv2d %data, %w {cvm.pack_offset = {data = 0 : i64}, channels
// CHECK-NEXT:    %s = cvm.cvm_right_shift %c {precision
// CHECK-NEXT:    %r = cvm.relu %s {cvm.offset = 256 : i64}
// CHECK-NEXT:    %f = cvm.flatten %r :
// CHECK-NEXT:    %u = cvm.param
// CHECK-NEXT:    %n = cvm.negative %u {cvm.offset = 0 : i64}
// CHECK-NEXT:    %d = cvm.dense %f, %n {cvm.pack_offset = {data = 384 : i64, weight = 256 : i64}, units
// CHECK-NEXT:    %y = cvm.cvm_right_shift %d {cvm.offset = 0 : i64, precision

// -----

// An op with two results gets one offset per result; non_max_suppression also allocates a scratch row.

func.func @main(%data: tensor<1x4x6xi32, #cvm.prec<8>>) -> tensor<1x4x6xi32, #cvm.prec<8>> {
  %count, %boxes = cvm.get_valid_counts %data {score_threshold = 0 : i64} : (tensor<1x4x6xi32, #cvm.prec<8>>) -> (tensor<1xi32, #cvm.prec<6>>, tensor<1x4x6xi32, #cvm.prec<8>>)
  %y = cvm.non_max_suppression %boxes, %count {iou_threshold = 50 : i64} : (tensor<1x4x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<6>>) -> tensor<1x4x6xi32, #cvm.prec<8>>
  func.return %y : tensor<1x4x6xi32, #cvm.prec<8>>
}

// CHECK-LABEL: func.func @main
// CHECK-SAME:      attributes {cvm.arena_bytes = 384 : i64}
// CHECK-NEXT:    %count, %boxes = cvm.get_valid_counts %data {cvm.offset = array<i64: 320, 0>,
// CHECK-NEXT:    %y = cvm.non_max_suppression %boxes, %count {cvm.offset = 128 : i64, cvm.scratch_offset = 256 : i64,

// -----

// Recorded offsets are followed; a buffer without one is placed by first fit around them: %c is live with %b
// (the tile reads %b while writing %c), not with %a. The arena is as large as recorded.

func.func @main(%data: tensor<4x16xi32, #cvm.prec<8>>) -> tensor<64xi32, #cvm.prec<11>> attributes {cvm.arena_bytes = 1024 : i64} {
  %a = cvm.relu %data {cvm.offset = 512 : i64} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.sum %a {axis = array<i64: 0>, cvm.offset = 0 : i64} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<16xi32, #cvm.prec<11>>
  %c = cvm.tile %b {reps = array<i64: 4>} : (tensor<16xi32, #cvm.prec<11>>) -> tensor<64xi32, #cvm.prec<11>>
  func.return %c : tensor<64xi32, #cvm.prec<11>>
}

// CHECK-LABEL: func.func @main
// CHECK-SAME:      attributes {cvm.arena_bytes = 1024 : i64}
// CHECK-NEXT:    %a = cvm.relu %data {cvm.offset = 512 : i64}
// CHECK-NEXT:    %b = cvm.sum %a {cvm.offset = 0 : i64, axis = array<i64: 0>}
// CHECK-NEXT:    %c = cvm.tile %b {cvm.offset = 64 : i64, reps = array<i64: 4>}

// -----

// Two buffers live at the same time may not share bytes.

func.func @main(%data: tensor<4x16xi32, #cvm.prec<8>>) -> tensor<64xi32, #cvm.prec<11>> {
  %a = cvm.relu %data {cvm.offset = 0 : i64} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.sum %a {axis = array<i64: 0>, cvm.offset = 128 : i64} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<16xi32, #cvm.prec<11>>
  %c = cvm.tile %b {reps = array<i64: 4>} : (tensor<16xi32, #cvm.prec<11>>) -> tensor<64xi32, #cvm.prec<11>>
  func.return %c : tensor<64xi32, #cvm.prec<11>>
}

// CHECK: cvm.sum %b: offset 128 overlaps a buffer live at the same time (offset 0, 256 bytes)

// -----

// Offsets are 64-byte aligned.

func.func @main(%data: tensor<4x16xi32, #cvm.prec<8>>) -> tensor<64xi32, #cvm.prec<11>> {
  %a = cvm.relu %data {cvm.offset = 32 : i64} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.sum %a {axis = array<i64: 0>} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<16xi32, #cvm.prec<11>>
  %c = cvm.tile %b {reps = array<i64: 4>} : (tensor<16xi32, #cvm.prec<11>>) -> tensor<64xi32, #cvm.prec<11>>
  func.return %c : tensor<64xi32, #cvm.prec<11>>
}

// CHECK: cvm.relu %a: expected an offset that is a multiple of 64, got 32

// -----

// A recorded arena must hold every buffer.

func.func @main(%data: tensor<4x16xi32, #cvm.prec<8>>) -> tensor<64xi32, #cvm.prec<11>> attributes {cvm.arena_bytes = 64 : i64} {
  %a = cvm.relu %data : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.sum %a {axis = array<i64: 0>} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<16xi32, #cvm.prec<11>>
  %c = cvm.tile %b {reps = array<i64: 4>} : (tensor<16xi32, #cvm.prec<11>>) -> tensor<64xi32, #cvm.prec<11>>
  func.return %c : tensor<64xi32, #cvm.prec<11>>
}

// CHECK: @main: expected an arena of at least 320 bytes, got 64

// -----

// An offset for a buffer the op does not allocate: the relu packs nothing.

func.func @main(%data: tensor<4x16xi32, #cvm.prec<8>>) -> tensor<64xi32, #cvm.prec<11>> {
  %a = cvm.relu %data {cvm.pack_offset = {data = 0 : i64}} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<4x16xi32, #cvm.prec<8>>
  %b = cvm.sum %a {axis = array<i64: 0>} : (tensor<4x16xi32, #cvm.prec<8>>) -> tensor<16xi32, #cvm.prec<11>>
  %c = cvm.tile %b {reps = array<i64: 4>} : (tensor<16xi32, #cvm.prec<11>>) -> tensor<64xi32, #cvm.prec<11>>
  func.return %c : tensor<64xi32, #cvm.prec<11>>
}

// CHECK: cvm.relu %a: expected no offset for packed operand 0: the op allocates no such buffer
