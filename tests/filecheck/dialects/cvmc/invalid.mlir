// RUN: cvm-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the cvmc dialect.

// `split` past the operands.
func.func @f(%a: memref<8x64xi8>, %i: index) {
  %0 = "cvmc.dot_u8s8"(%a, %i) <{depth = 64 : i64, split = 2 : i64}> : (memref<8x64xi8>, index) -> i32
  func.return
}
// CHECK: expected 'split' in [1, 1], got 2

// -----
// An operand where a memref belongs.
func.func @f(%i: index) {
  %0 = "cvmc.dot_u8s8"(%i, %i) <{depth = 64 : i64, split = 1 : i64}> : (index, index) -> i32
  func.return
}
// CHECK: expected 'a' to be a memref, got index

// -----
// The wrong element type.
func.func @f(%a: memref<8x64xi16>, %w: memref<16x64xi8>) {
  %0 = "cvmc.dot_u8s8"(%a, %w) <{depth = 64 : i64, split = 1 : i64}> : (memref<8x64xi16>, memref<16x64xi8>) -> i32
  func.return
}
// CHECK: expected 'a' of element type i8, got i16

// -----
// More indices than the memref has dimensions.
func.func @f(%m: memref<64xi8>, %i: index) {
  %0 = "cvmc.load_word"(%m, %i, %i) : (memref<64xi8>, index, index) -> i32
  func.return
}
// CHECK: expected 'memref' followed by at most 1 index operands, got ['index', 'index']

// -----
// Results and rows disagree.
func.func @f(%a: memref<8x64xi8>, %w: memref<16x64xi8>) {
  %0 = "cvmc.dot_u8s8"(%a, %w) <{depth = 64 : i64, split = 1 : i64, rows = 2 : i64}> : (memref<8x64xi8>, memref<16x64xi8>) -> i32
  func.return
}
// CHECK: expected 2 results (rows), got 1

// -----
// The accumulators of a micro-kernel are int32.
func.func @f(%x: memref<4x64xi16>, %b: memref<1x32x32xi16>, %acc: memref<16x4xi16>) {
  "cvmc.mmk_i16"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64}> : (memref<4x64xi16>, memref<1x32x32xi16>, memref<16x4xi16>) -> ()
  func.return
}
// CHECK: expected 'acc' of element type i32, got i16

// -----
// `acc_split` not after `split`.
func.func @f(%x: memref<4x64xi16>, %b: memref<1x32x32xi16>, %acc: memref<16x4xi32>) {
  "cvmc.mmk_i16"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 1 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64}> : (memref<4x64xi16>, memref<1x32x32xi16>, memref<16x4xi32>) -> ()
  func.return
}
// CHECK: expected 'acc_split' in [2, 2], got 1

// -----
// A required property missing.
func.func @f(%a: memref<8x64xi8>, %w: memref<16x64xi8>) {
  %0 = "cvmc.dot_u8s8"(%a, %w) <{split = 1 : i64}> : (memref<8x64xi8>, memref<16x64xi8>) -> i32
  func.return
}
// CHECK: property 'depth' expected in operation 'cvmc.dot_u8s8'

// -----
// pack_tile's last operand says whether the row is inside the input.
func.func @f(%src: memref<8x8xi32>, %out: memref<8x8xi8>, %i: index) {
  "cvmc.pack_tile"(%src, %out, %i) <{split = 1 : i64, zero_point = 0 : i64}> : (memref<8x8xi32>, memref<8x8xi8>, index) -> ()
  func.return
}
// CHECK: expected the last operand 'inside' of type i1, got index

// -----
// remf on two float types.
func.func @f(%x: f32, %y: f64) {
  %0 = "arith.remf"(%x, %y) : (f32, f64) -> f32
  func.return
}
// CHECK: expected one float type, got f32, f64 -> f32

// -----
// A dot's depth one short of a multiple of 64.
func.func @f(%a: memref<8x64xi8>, %w: memref<16x64xi8>) {
  %0 = "cvmc.dot_u8s8"(%a, %w) <{depth = 63 : i64, split = 1 : i64}> : (memref<8x64xi8>, memref<16x64xi8>) -> i32
  func.return
}
// CHECK: expected 'depth' a positive multiple of 64, got 63

// -----
// An int16 micro-kernel's depth: pairs of elements.
func.func @f(%x: memref<4x64xi16>, %b: memref<1x32x32xi16>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_i16"(%x, %b, %acc) <{depth = 63 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64}> : (memref<4x64xi16>, memref<1x32x32xi16>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 'depth' a positive multiple of 2, got 63

// -----
// A u8 x s8 micro-kernel's depth: groups of four.
func.func @f(%x: memref<4x64xi8>, %b: memref<1x32x32xi8>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_u8s8"(%x, %b, %acc) <{depth = 66 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64}> : (memref<4x64xi8>, memref<1x32x32xi8>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 'depth' a positive multiple of 4, got 66

// -----
// No rows.
func.func @f(%x: memref<4x64xi16>, %b: memref<1x32x32xi16>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_i16"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 0 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64}> : (memref<4x64xi16>, memref<1x32x32xi16>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 'rows', 'kh' and 'kw' > 0, got 0, 1, 1

// -----
// Lanes in eights.
func.func @f(%x: memref<4x64xi16>, %b: memref<1x32x32xi16>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_i16"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 12 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64}> : (memref<4x64xi16>, memref<1x32x32xi16>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 'lanes' a positive multiple of 8, got 12

// -----
// The int16 micro-kernel has the AVX2 form only.
func.func @f(%x: memref<4x64xi16>, %b: memref<1x32x32xi16>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_i16"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64, isa = "avx512-vnni"}> : (memref<4x64xi16>, memref<1x32x32xi16>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 'isa' one of avx2 for cvmc.mmk_i16, got avx512-vnni

// -----
// An isa the dialect does not know.
func.func @f(%x: memref<4x64xi8>, %b: memref<1x32x32xi8>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_u8s8"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64, isa = "neon"}> : (memref<4x64xi8>, memref<1x32x32xi8>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 'isa' one of avx2, avx512-vnni, amx for cvmc.mmk_u8s8, got neon

// -----
// VNNI lanes come in sixteens.
func.func @f(%x: memref<4x64xi8>, %b: memref<1x32x32xi8>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_u8s8"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 24 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64, isa = "avx512-vnni"}> : (memref<4x64xi8>, memref<1x32x32xi8>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 'lanes' a multiple of 16 for isa avx512-vnni, got 24

// -----
// An AMX tile holds 16 rows: one past it.
func.func @f(%x: memref<4x64xi8>, %b: memref<1x32x32xi8>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_u8s8"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 17 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64, isa = "amx"}> : (memref<4x64xi8>, memref<1x32x32xi8>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 16 'lanes' and at most 16 'rows' for isa amx, got 16 and 17

// -----
// An AMX tile is 16 lanes wide.
func.func @f(%x: memref<4x64xi8>, %b: memref<1x32x32xi8>, %acc: memref<16x16xi32>) {
  "cvmc.mmk_u8s8"(%x, %b, %acc) <{depth = 64 : i64, split = 1 : i64, acc_split = 2 : i64, rows = 4 : i64, lanes = 32 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64, isa = "amx"}> : (memref<4x64xi8>, memref<1x32x32xi8>, memref<16x16xi32>) -> ()
  func.return
}
// CHECK: expected 16 'lanes' and at most 16 'rows' for isa amx, got 32 and 4

// -----
// arith.index_castui: an index on one side, not both.
func.func @f(%i: index) {
  %0 = arith.index_castui %i : index to index
  func.return
}
// CHECK: expected one of the operand and the result an index, got index -> index

// -----
// Nor neither.
func.func @f(%s: i32) {
  %0 = arith.index_castui %s : i32 to i64
  func.return
}
// CHECK: expected one of the operand and the result an index, got i32 -> i64
