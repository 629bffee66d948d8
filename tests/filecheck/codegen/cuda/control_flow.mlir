// RUN: python -m cvmc.codegen.cuda %s | filecheck %s

// scf.for: a C for loop whose iter_args are variables declared before it and assigned at the end of the body
// (through temporaries when one yielded value reads another); scf.if: result variables assigned in each branch;
// a nested scf.parallel: sequential loops inside the thread's unit; memref.alloca: a local array; views: the
// same base pointer, moved only when the result type's offset disagrees; memref.copy: a loop nest.

func.func @rows(%out: memref<4xi32>, %a: memref<4x8xi32, strided<[16, 2], offset: 5>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %r:3 = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %z, %p = %z, %q = %one) -> (i32, i32, i32) {
      %x = memref.load %a[%i, %j] : memref<4x8xi32, strided<[16, 2], offset: 5>>
      %neg = arith.cmpi slt, %x, %z : i32
      %v = scf.if %neg -> (i32) {
        scf.yield %z : i32
      } else {
        scf.yield %x : i32
      }
      %n = arith.addi %acc, %v : i32
      scf.yield %n, %q, %p : i32, i32, i32
    }
    %s = arith.addi %r#0, %r#1 : i32
    memref.store %s, %out[%i] : memref<4xi32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: b_rows(
// CHECK-NEXT:   for (u32 v0 = blockIdx.x * blockDim.x + threadIdx.x; v0 < 4u; v0 += gridDim.x * blockDim.x) {
// CHECK-NEXT:     i64 v1 = (i64)(v0);
// CHECK-NEXT:     i32 v2 = 0;
// CHECK-NEXT:     i32 v3 = 0;
// CHECK-NEXT:     i32 v4 = 1;
// CHECK-NEXT:     for (i64 v5 = 0LL; v5 < 8LL; v5 += 1LL) {
// CHECK-NEXT:       i32 v6 = arg1[v1 * 16 + v5 * 2 + 5];
// CHECK-NEXT:       bool v7 = (v6 < 0);
// CHECK-NEXT:       i32 v8;
// CHECK-NEXT:       if (v7) {
// CHECK-NEXT:         v8 = 0;
// CHECK-NEXT:       } else {
// CHECK-NEXT:         v8 = v6;
// CHECK-NEXT:       }
// CHECK-NEXT:       i32 v9 = (i32)((u32)v2 + (u32)v8);
// CHECK-NEXT:       i32 v10 = v9;
// CHECK-NEXT:       i32 v11 = v4;
// CHECK-NEXT:       i32 v12 = v3;
// CHECK-NEXT:       v2 = v10;
// CHECK-NEXT:       v3 = v11;
// CHECK-NEXT:       v4 = v12;
// CHECK-NEXT:     }
// CHECK-NEXT:     i32 v13 = (i32)((u32)v2 + (u32)v3);
// CHECK-NEXT:     arg0[v1] = v13;

func.func @nest(%out: memref<2x3x4xi32>, %a: memref<4x5xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %tmp = memref.alloca() : memref<3x4xi32>
  "scf.parallel"(%c0, %c2, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%o: index):
    %sub = memref.subview %a[1, 1] [3, 4] [1, 1] : memref<4x5xi32> to memref<3x4xi32, strided<[5, 1], offset: 6>>
    "memref.copy"(%sub, %tmp) : (memref<3x4xi32, strided<[5, 1], offset: 6>>, memref<3x4xi32>) -> ()
    "scf.parallel"(%c0, %c0, %c3, %c4, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb1(%i: index, %j: index):
      %x = memref.load %tmp[%i, %j] : memref<3x4xi32>
      memref.store %x, %out[%o, %i, %j] : memref<2x3x4xi32>
      scf.reduce
    }) : (index, index, index, index, index, index) -> ()
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// CHECK-LABEL: b_nest(
// CHECK-NEXT:   i32 v0[12];
// CHECK-NEXT:   for (u32 v1 = blockIdx.x * blockDim.x + threadIdx.x; v1 < 2u; v1 += gridDim.x * blockDim.x) {
// CHECK-NEXT:     i64 v2 = (i64)(v1);
// CHECK-NEXT:     for (i64 v3 = 0; v3 < 3; v3 += 1) {
// CHECK-NEXT:       for (i64 v4 = 0; v4 < 4; v4 += 1) {
// CHECK-NEXT:         v0[v3 * 4 + v4] = arg1[v3 * 5 + v4 + 6];
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     for (i64 v5 = 0LL; v5 < 3LL; v5 += 1LL) {
// CHECK-NEXT:       for (i64 v6 = 0LL; v6 < 4LL; v6 += 1LL) {
// CHECK-NEXT:         i32 v7 = v0[v5 * 4 + v6];
// CHECK-NEXT:         arg0[v2 * 12 + v5 * 4 + v6] = v7;

func.func @moved_view(%out: memref<4xi64>, %a: memref<16xi64>) {
  %c0 = arith.constant 0 : index
  %heap = memref.alloc() : memref<8xi64>
  %v = memref.reinterpret_cast %a to offset: [6], sizes: [4], strides: [1] : memref<16xi64> to memref<4xi64>
  %x = memref.load %v[%c0] : memref<4xi64>
  memref.store %x, %heap[%c0] : memref<8xi64>
  memref.store %x, %out[%c0] : memref<4xi64>
  memref.dealloc %heap : memref<8xi64>
  func.return
}

// CHECK-LABEL: b_moved_view(
// CHECK-NEXT:   if (blockIdx.x != 0 || threadIdx.x != 0) return;
// CHECK-NEXT:   i64 *v0 = (i64 *)malloc(8 * sizeof(i64));
// CHECK-NEXT:   if (v0 == nullptr) __trap();
// CHECK-NEXT:   const i64 *v1 = arg1 + 6;
// CHECK-NEXT:   i64 v2 = v1[0];
