// RUN: python -m cvmc.codegen.cuda %s | filecheck %s

// One extern "C" __global__ kernel per func.func, named k_<symbol>, taking one array of the argument pointers
// and calling the body b_<symbol>, whose parameters are restrict base pointers (const where never written, i1 as
// bytes); a top-level scf.parallel becomes a grid-stride loop over its flattened
// constant dims; any other kernel runs on one thread.

func.func @add(%out: memref<4x8xi32>, %a: memref<4x8xi32, strided<[1, 4], offset: 3>>, %m: memref<4x8xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %x = memref.load %a[%i, %j] : memref<4x8xi32, strided<[1, 4], offset: 3>>
    %b = memref.load %m[%i, %j] : memref<4x8xi1>
    %z = arith.constant 0 : i32
    %y = arith.select %b, %x, %z : i32
    memref.store %y, %out[%i, %j] : memref<4x8xi32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// The source includes no header, before or after the prelude's types (NVRTC has no standard headers).
// CHECK-NOT:  #include
// CHECK:      typedef signed char i8;
// CHECK-NOT:  #include
// CHECK:      static __device__ __forceinline__ void b_add(i32 *__restrict__ arg0, const i32 *__restrict__ arg1, const u8 *__restrict__ arg2) {
// CHECK-NEXT:   for (u32 v0 = blockIdx.x * blockDim.x + threadIdx.x; v0 < 32u; v0 += gridDim.x * blockDim.x) {
// CHECK-NEXT:     i64 v1 = (i64)(v0 / 8u);
// CHECK-NEXT:     i64 v2 = (i64)(v0 % 8u);
// CHECK-NEXT:     i32 v3 = arg1[v1 + v2 * 4 + 3];
// CHECK-NEXT:     bool v4 = (arg2[v1 * 8 + v2] != 0);
// CHECK-NEXT:     i32 v5 = (v4 ? v3 : 0);
// CHECK-NEXT:     arg0[v1 * 8 + v2] = v5;
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256) k_add(void *const *__restrict__ args) {
// CHECK-NEXT:   b_add((i32 *)args[0], (const i32 *)args[1], (const u8 *)args[2]);
// CHECK-NEXT: }

func.func @"two.phases"(%out: memref<8xi32>, %flag: memref<i1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0 : i32
  %t = arith.constant true
  "scf.parallel"(%c0, %c8, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    memref.store %z, %out[%i] : memref<8xi32>
    scf.reduce
  }) : (index, index, index) -> ()
  memref.store %t, %flag[] : memref<i1>
  func.return
}

// CHECK:      static __device__ __forceinline__ void b_two_phases(i32 *__restrict__ arg0, u8 *__restrict__ arg1) {
// CHECK-NEXT:   if (blockIdx.x != 0 || threadIdx.x != 0) return;  // one thread runs the kernel
// CHECK-NEXT:   for (i64 v0 = 0LL; v0 < 8LL; v0 += 1LL) {
// CHECK-NEXT:     arg0[v0] = 0;
// CHECK-NEXT:   }
// CHECK-NEXT:   arg1[0] = (u8)true;
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256) k_two_phases(void *const *__restrict__ args) {
// CHECK-NEXT:   b_two_phases((i32 *)args[0], (u8 *)args[1]);
// CHECK-NEXT: }

// A huge space of units counts in i64; lower bounds and steps are applied to the unit's coordinates.
func.func @big(%out: memref<70000x70000xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c70000 = arith.constant 70000 : index
  %c70000b = arith.constant 70000 : index
  %v = arith.constant -1 : i8
  "scf.parallel"(%c5, %c0, %c70000, %c70000b, %c2, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    memref.store %v, %out[%i, %j] : memref<70000x70000xi8>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// CHECK:      b_big(i8 *__restrict__ arg0) {
// CHECK-NEXT:   for (i64 v0 = (i64)blockIdx.x * blockDim.x + threadIdx.x; v0 < 2449860000LL; v0 += (i64)gridDim.x * blockDim.x) {
// CHECK-NEXT:     i64 v1 = 5LL + (i64)(v0 / 70000LL) * 2LL;
// CHECK-NEXT:     i64 v2 = (i64)(v0 % 70000LL);
// CHECK-NEXT:     arg0[v1 * 70000 + v2] = ((i8)-1);
