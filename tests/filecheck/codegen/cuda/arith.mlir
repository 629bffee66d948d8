// RUN: python -m cvmc.codegen.cuda %s | filecheck %s

// Total integer semantics without undefined behaviour: wrapping arithmetic on unsigned types, narrow operands
// widened to 32 bits (sign or zero extended as the op says) and truncated back, division and remainder through
// helpers that give 0 for a zero divisor and INT_MIN for INT_MIN / -1, shifts selecting 0 (or clamping the
// amount) out of range. Floats: round-to-nearest intrinsics (never contracted), saturating conversions.

func.func @ints(%o32: memref<8xi32>, %o8: memref<4xi8>, %o64: memref<2xi64>, %b: memref<2xi1>,
                %a32: memref<2xi32>, %a8: memref<2xi8>, %a64: memref<2xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %a32[%c0] : memref<2xi32>
  %y = memref.load %a32[%c1] : memref<2xi32>
  %p = memref.load %a8[%c0] : memref<2xi8>
  %q = memref.load %a8[%c1] : memref<2xi8>
  %u = memref.load %a64[%c0] : memref<2xi64>
  %v = memref.load %a64[%c1] : memref<2xi64>
  %add = arith.addi %x, %y : i32
  %div = arith.divsi %x, %y : i32
  %rem = arith.remui %x, %y : i32
  %fdiv = arith.floordivsi %x, %y : i32
  %shl = arith.shli %x, %y : i32
  %shr = arith.shrsi %x, %y : i32
  %min = arith.minui %x, %y : i32
  %abs = math.absi %x : i32
  %mul8 = arith.muli %p, %q : i8
  %div8 = arith.divsi %p, %q : i8
  %shr8 = arith.shrui %p, %q : i8
  %ext = arith.extui %p : i8 to i32
  %div64 = arith.divsi %u, %v : i64
  %pow = math.ipowi %u, %v : i64
  %lt = arith.cmpi ult, %p, %q : i8
  %sgt = arith.cmpi sgt, %x, %y : i32
  %tr = arith.trunci %x : i32 to i8
  %c3 = arith.constant 3 : i32
  %c40 = arith.constant 40 : i32
  %shrc = arith.shrsi %x, %c3 : i32
  %shlc = arith.shli %x, %c40 : i32
  memref.store %add, %o32[%c0] : memref<8xi32>
  memref.store %div, %o32[%c0] : memref<8xi32>
  memref.store %rem, %o32[%c0] : memref<8xi32>
  memref.store %fdiv, %o32[%c0] : memref<8xi32>
  memref.store %shl, %o32[%c0] : memref<8xi32>
  memref.store %shr, %o32[%c0] : memref<8xi32>
  memref.store %min, %o32[%c0] : memref<8xi32>
  memref.store %abs, %o32[%c0] : memref<8xi32>
  memref.store %mul8, %o8[%c0] : memref<4xi8>
  memref.store %div8, %o8[%c0] : memref<4xi8>
  memref.store %shr8, %o8[%c0] : memref<4xi8>
  memref.store %ext, %o32[%c0] : memref<8xi32>
  memref.store %div64, %o64[%c0] : memref<2xi64>
  memref.store %pow, %o64[%c0] : memref<2xi64>
  memref.store %lt, %b[%c0] : memref<2xi1>
  memref.store %sgt, %b[%c0] : memref<2xi1>
  memref.store %tr, %o8[%c0] : memref<4xi8>
  memref.store %shrc, %o32[%c1] : memref<8xi32>
  memref.store %shlc, %o32[%c1] : memref<8xi32>
  func.return
}

// The helpers of the whole module come first, once each, only those used.
// CHECK:      static __device__ __forceinline__ i32 cvmc_divsi_i32(i32 a, i32 b) {
// CHECK-NEXT:   return b == 0 ? 0 : (b == -1 ? (i32)((u32)0 - (u32)a) : a / b);
// CHECK-NEXT: }
// CHECK:      static __device__ __forceinline__ i32 cvmc_floordivsi_i32(i32 a, i32 b) {
// CHECK:      static __device__ __forceinline__ u32 cvmc_remui_u32(u32 a, u32 b) {
// CHECK-NEXT:   return b == 0 ? 0 : a % b;
// CHECK:      static __device__ __forceinline__ i64 cvmc_divsi_i64(i64 a, i64 b) {
// CHECK:      static __device__ __forceinline__ i64 cvmc_ipowi_i64(i64 b, i64 e) {
// CHECK-NOT:  cvmc_divui
// CHECK:      static __device__ __forceinline__ float cvmc_minimumf_float(float a, float b) {
// CHECK-NEXT:   if (a != a || b != b) return __fadd_rn(a, b);
// CHECK-NEXT:   if (a == b) return __float_as_int(a) < 0 ? a : b;
// CHECK-NEXT:   return a < b ? a : b;
// CHECK:      static __device__ __forceinline__ i32 cvmc_clamp_i32(i32 x, i32 lo, i32 hi) {

// CHECK-LABEL: b_ints(
// Constant indices are folded into the address.
// CHECK:      i32 [[X:v[0-9]+]] = arg4[0];
// CHECK-NEXT: i32 [[Y:v[0-9]+]] = arg4[1];
// CHECK:      i32 [[ADD:v[0-9]+]] = (i32)((u32)[[X]] + (u32)[[Y]]);
// CHECK-NEXT: i32 {{v[0-9]+}} = cvmc_divsi_i32([[X]], [[Y]]);
// CHECK-NEXT: i32 {{v[0-9]+}} = (i32)cvmc_remui_u32((u32)[[X]], (u32)[[Y]]);
// CHECK-NEXT: i32 {{v[0-9]+}} = cvmc_floordivsi_i32([[X]], [[Y]]);
// CHECK-NEXT: i32 {{v[0-9]+}} = ((u32)[[Y]] < 32u ? (i32)((u32)[[X]] << (u32)[[Y]]) : 0);
// CHECK-NEXT: i32 {{v[0-9]+}} = (i32)([[X]] >> ((u32)[[Y]] < 32u ? (u32)[[Y]] : 31u));
// CHECK-NEXT: i32 {{v[0-9]+}} = ((u32)[[X]] < (u32)[[Y]] ? [[X]] : [[Y]]);
// CHECK-NEXT: i32 {{v[0-9]+}} = (i32)([[X]] < 0 ? 0u - (u32)[[X]] : (u32)[[X]]);
// CHECK-NEXT: i8 {{v[0-9]+}} = (i8)((u32)[[P:v[0-9]+]] * (u32)[[Q:v[0-9]+]]);
// CHECK-NEXT: i8 {{v[0-9]+}} = (i8)cvmc_divsi_i32((i32)[[P]], (i32)[[Q]]);
// CHECK-NEXT: i8 {{v[0-9]+}} = ((u32)(u8)[[Q]] < 8u ? (i8)((u32)(u8)[[P]] >> (u32)(u8)[[Q]]) : ((i8)0));
// CHECK-NEXT: i32 {{v[0-9]+}} = (i32)(u32)(u8)[[P]];
// CHECK-NEXT: i64 {{v[0-9]+}} = cvmc_divsi_i64([[U:v[0-9]+]], [[V:v[0-9]+]]);
// CHECK-NEXT: i64 {{v[0-9]+}} = cvmc_ipowi_i64([[U]], [[V]]);
// CHECK-NEXT: bool {{v[0-9]+}} = ((u32)(u8)[[P]] < (u32)(u8)[[Q]]);
// CHECK-NEXT: bool {{v[0-9]+}} = ([[X]] > [[Y]]);
// CHECK-NEXT: i8 {{v[0-9]+}} = (i8)(u32)[[X]];
// A constant shift amount is checked here: clamped for shrsi, 0 for shli and shrui out of range.
// CHECK-NEXT: i32 {{v[0-9]+}} = (i32)([[X]] >> 3);
// CHECK-NEXT: i32 {{v[0-9]+}} = 0;

func.func @floats(%o: memref<4xf32>, %d: memref<2xf64>, %i: memref<4xi8>, %u: memref<2xi64>, %a: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %a[%c0] : memref<2xf32>
  %y = memref.load %a[%c1] : memref<2xf32>
  %m = arith.mulf %x, %y : f32
  %s = arith.addf %m, %x : f32
  %mn = arith.minimumf %x, %y : f32
  %r = math.round %x : f32
  %q = math.sqrt %x : f32
  %ex = arith.extf %x : f32 to f64
  %e = math.exp %ex : f64
  %si = arith.fptosi %x : f32 to i8
  %ui = arith.fptoui %ex : f64 to i64
  %nan = "math.isnan"(%x) : (f32) -> i1
  %one = arith.cmpf one, %x, %y : f32
  memref.store %s, %o[%c0] : memref<4xf32>
  memref.store %mn, %o[%c0] : memref<4xf32>
  memref.store %r, %o[%c0] : memref<4xf32>
  memref.store %q, %o[%c0] : memref<4xf32>
  memref.store %e, %d[%c0] : memref<2xf64>
  memref.store %si, %i[%c0] : memref<4xi8>
  memref.store %ui, %u[%c0] : memref<2xi64>
  func.return
}

// CHECK-LABEL: b_floats(
// CHECK:      float [[M:v[0-9]+]] = __fmul_rn([[X:v[0-9]+]], [[Y:v[0-9]+]]);
// CHECK-NEXT: float {{v[0-9]+}} = __fadd_rn([[M]], [[X]]);
// CHECK-NEXT: float {{v[0-9]+}} = cvmc_minimumf_float([[X]], [[Y]]);
// CHECK-NEXT: float {{v[0-9]+}} = roundf([[X]]);
// CHECK-NEXT: float {{v[0-9]+}} = __fsqrt_rn([[X]]);
// CHECK-NEXT: double [[EX:v[0-9]+]] = (double)[[X]];
// CHECK-NEXT: double {{v[0-9]+}} = exp([[EX]]);
// CHECK-NEXT: i8 {{v[0-9]+}} = (i8)cvmc_clamp_i32(__float2int_rz([[X]]), -128, 127);
// CHECK-NEXT: i64 {{v[0-9]+}} = (i64)__double2ull_rz([[EX]]);
// CHECK-NEXT: bool {{v[0-9]+}} = ([[X]] != [[X]]);
// CHECK-NEXT: bool {{v[0-9]+}} = ([[X]] < [[Y]] || [[X]] > [[Y]]);
