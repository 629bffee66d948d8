// RUN: python -m cvmc.codegen.cuda %s | filecheck %s

// What the GPU schedule (loops.gpu) prints: a block kernel (a top-level loop from gpu.block_id by
// gpu.grid_dim) needs no one-thread guard; the gpu ids are the CUDA built-ins; an alloca of memory space 3 is a
// `__shared__` array of the block; gpu.barrier is `__syncthreads()`; cvmc.load_word reads four bytes as one i32
// (bytes combined, with the 4-byte alignment promised: one load on the GPU, no type punning) and cvmc.dp4a is
// `__dp4a`.

func.func @dot(%out: memref<8xi32>, %a: memref<8x16xi8>, %b: memref<16xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0 : i32
  %shared = memref.alloca() : memref<8xi32, 3 : i64>
  %blk = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %grid = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %threads = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
  scf.for %b0 = %blk to %c1 step %grid {
    scf.for %v = %t to %c8 step %threads {
      %s = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %z) -> (i32) {
        %k = arith.muli %j, %c4 : index
        %x = "cvmc.load_word"(%a, %v, %k) : (memref<8x16xi8>, index, index) -> i32
        %y = "cvmc.load_word"(%b, %k) : (memref<16xi8>, index) -> i32
        %d = "cvmc.dp4a"(%x, %y, %acc) : (i32, i32, i32) -> i32
        scf.yield %d : i32
      }
      memref.store %s, %shared[%v] : memref<8xi32, 3 : i64>
    }
    "gpu.barrier"() : () -> ()
    scf.for %v = %t to %c8 step %threads {
      %r = memref.load %shared[%v] : memref<8xi32, 3 : i64>
      memref.store %r, %out[%v] : memref<8xi32>
    }
    "gpu.barrier"() : () -> ()
  }
  func.return
}

// CHECK:       static __device__ __forceinline__ i32 cvmc_load_word(const i8 *p) {
// CHECK-NEXT:    const u8 *q = (const u8 *)__builtin_assume_aligned(p, 4);
// CHECK-NEXT:    return (i32)((u32)q[0] | (u32)q[1] << 8 | (u32)q[2] << 16 | (u32)q[3] << 24);
// CHECK-LABEL: void b_dot(i32 *__restrict__ arg0, const i8 *__restrict__ arg1, const i8 *__restrict__ arg2) {
// CHECK-NOT:     one thread runs the kernel
// CHECK:         __shared__ i32 [[SH:v[0-9]+]][8];
// CHECK-NEXT:    i64 [[B:v[0-9]+]] = (i64)blockIdx.x;
// CHECK-NEXT:    i64 [[G:v[0-9]+]] = (i64)gridDim.x;
// CHECK-NEXT:    i64 [[T:v[0-9]+]] = (i64)threadIdx.x;
// CHECK-NEXT:    i64 [[BD:v[0-9]+]] = (i64)blockDim.x;
// CHECK-NEXT:    for (i64 {{v[0-9]+}} = [[B]]; {{v[0-9]+}} < 1LL; {{v[0-9]+}} += [[G]]) {
// CHECK-NEXT:      for (i64 [[V:v[0-9]+]] = [[T]]; [[V]] < 8LL; [[V]] += [[BD]]) {
// CHECK:             i32 [[X:v[0-9]+]] = cvmc_load_word(&arg1[[[V]] * 16 + {{v[0-9]+}}]);
// CHECK-NEXT:        i32 [[Y:v[0-9]+]] = cvmc_load_word(&arg2[{{v[0-9]+}}]);
// CHECK-NEXT:        i32 {{v[0-9]+}} = __dp4a([[X]], [[Y]], {{v[0-9]+}});
// CHECK:           [[SH]][[[V]]] = {{v[0-9]+}};
// CHECK:         __syncthreads();
// CHECK:         __syncthreads();
