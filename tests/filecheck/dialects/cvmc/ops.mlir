// RUN: cvm-opt %s | cvm-opt | filecheck %s

// The cvmc dialect's ops round-trip (each attribute rule at its bound: `cvmc/invalid.mlir` has one past it) in generic form (the loop level's micro-kernel ops and the upstream-named
// float ops of the CINN lowering), their properties kept.

func.func @ops(%a: memref<8x64xi8>, %w: memref<16x64xi8>, %x: memref<4x64xi16>, %b: memref<1x32x32xi16>,
               %acc: memref<16x4xi32>, %src: memref<1x8x8x8xi32>, %out: memref<1x8x8x8xi8>, %m: memref<64xi8>,
               %i: index, %ok: i1, %s: i32, %f: f32) {
  %0 = "cvmc.dot_u8s8"(%a, %i, %w, %i) <{depth = 64 : i64, split = 2 : i64}> : (memref<8x64xi8>, index, memref<16x64xi8>, index) -> i32
  %1, %2 = "cvmc.dot_u8s8"(%a, %i, %w, %i) <{depth = 64 : i64, split = 2 : i64, rows = 2 : i64, emulated = 1 : i64}> : (memref<8x64xi8>, index, memref<16x64xi8>, index) -> (i32, i32)
  "cvmc.mmk_i16"(%x, %i, %b, %i, %i, %i, %acc, %i, %i) <{depth = 64 : i64, split = 2 : i64, acc_split = 6 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64}> : (memref<4x64xi16>, index, memref<1x32x32xi16>, index, index, index, memref<16x4xi32>, index, index) -> ()
  "cvmc.mmk_u8s8"(%a, %i, %w, %i, %acc, %i, %i) <{depth = 64 : i64, split = 2 : i64, acc_split = 4 : i64, rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64, pixel_major = 1 : i64, isa = "avx512-vnni"}> : (memref<8x64xi8>, index, memref<16x64xi8>, index, memref<16x4xi32>, index, index) -> ()
  "cvmc.mmk_u8s8"(%a, %i, %w, %i, %acc, %i, %i) <{depth = 4 : i64, split = 2 : i64, acc_split = 4 : i64, rows = 16 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64, stride_w = 0 : i64, isa = "amx"}> : (memref<8x64xi8>, index, memref<16x64xi8>, index, memref<16x4xi32>, index, index) -> ()
  "cvmc.pack_tile"(%src, %i, %i, %i, %i, %out, %i, %i, %i, %i, %ok) <{split = 5 : i64, zero_point = 128 : i64}> : (memref<1x8x8x8xi32>, index, index, index, index, memref<1x8x8x8xi8>, index, index, index, index, i1) -> ()
  %3 = "cvmc.load_word"(%m, %i) : (memref<64xi8>, index) -> i32
  %4 = "cvmc.dp4a"(%3, %s, %s) : (i32, i32, i32) -> i32
  %5 = "math.isnan"(%f) : (f32) -> i1
  %6 = "math.isinf"(%f) : (f32) -> i1
  %7 = "math.isfinite"(%f) : (f32) -> i1
  %8 = "arith.remf"(%f, %f) : (f32, f32) -> f32
  %9 = arith.index_castui %s : i32 to index
  %10 = arith.index_castui %i : index to i8
  func.return
}

// CHECK:      %0 = "cvmc.dot_u8s8"(%a, %i, %w, %i) <{depth = 64 : i64, split = 2 : i64}> : (memref<8x64xi8>, index, memref<16x64xi8>, index) -> i32
// CHECK-NEXT: %1, %2 = "cvmc.dot_u8s8"(%a, %i, %w, %i) <{depth = 64 : i64, split = 2 : i64, rows = 2 : i64, emulated = 1 : i64}>
// CHECK-NEXT: "cvmc.mmk_i16"(%x, %i, %b, %i, %i, %i, %acc, %i, %i) <{depth = 64 : i64, split = 2 : i64, acc_split = 6 : i64, rows = 4 : i64, lanes = 16 : i64
// CHECK-NEXT: "cvmc.mmk_u8s8"({{.*}}) <{{{.*}}pixel_major = 1 : i64, isa = "avx512-vnni"}>
// CHECK-NEXT: "cvmc.mmk_u8s8"({{.*}}) <{depth = 4 : i64, {{.*}}rows = 16 : i64, lanes = 16 : i64, {{.*}}isa = "amx"}>
// CHECK-NEXT: "cvmc.pack_tile"({{.*}}, %ok) <{split = 5 : i64, zero_point = 128 : i64}>
// CHECK-NEXT: %3 = "cvmc.load_word"(%m, %i) : (memref<64xi8>, index) -> i32
// CHECK-NEXT: %4 = "cvmc.dp4a"(%3, %s, %s) : (i32, i32, i32) -> i32
// CHECK-NEXT: %5 = "math.isnan"(%f) : (f32) -> i1
// CHECK-NEXT: %6 = "math.isinf"(%f) : (f32) -> i1
// CHECK-NEXT: %7 = "math.isfinite"(%f) : (f32) -> i1
// CHECK-NEXT: %8 = "arith.remf"(%f, %f) : (f32, f32) -> f32
// CHECK-NEXT: %9 = arith.index_castui %s : i32 to index
// CHECK-NEXT: %10 = arith.index_castui %i : index to i8
