// RUN: cvm-opt %s -p "convert-cvm-to-loops" --split-input-file --verify-diagnostics | filecheck %s

// convert-cvm-to-loops reads a bufferized module (what cvm-bufferize writes): each outlined kernel, its cvm ops
// between loads and stores, gets its family's loop nest over the same arguments; the host @main is left as it is.
// Here an elementwise kernel (a relu reading a broadcast view, with a shift fused in) and a computed one (a sum).

builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx2", mmk = true, emulated = false, vector_bytes = 32>} {
  func.func @relu_cvm_right_shift(%out: memref<2x4xi32>, %x: memref<2x4xi32, strided<[0, 1]>>) {
    %0 = cvm_sched.load %x : memref<2x4xi32, strided<[0, 1]>> -> tensor<2x4xi32, #cvm.prec<8>>
    %1 = cvm.relu %0 : (tensor<2x4xi32, #cvm.prec<8>>) -> tensor<2x4xi32, #cvm.prec<8>>
    %2 = cvm.cvm_right_shift %1 {precision = 4 : i64, shift_bit = 2 : i64} : (tensor<2x4xi32, #cvm.prec<8>>) -> tensor<2x4xi32, #cvm.prec<4>>
    cvm_sched.store %2, %out : tensor<2x4xi32, #cvm.prec<4>>, memref<2x4xi32>
    func.return
  }
  func.func @sum(%out: memref<4xi32>, %x: memref<2x4xi32>) {
    %0 = cvm_sched.load %x : memref<2x4xi32> -> tensor<2x4xi32, #cvm.prec<4>>
    %1 = cvm.sum %0 {axis = array<i64: 0>} : (tensor<2x4xi32, #cvm.prec<4>>) -> tensor<4xi32, #cvm.prec<6>>
    cvm_sched.store %1, %out : tensor<4xi32, #cvm.prec<6>>, memref<4xi32>
    func.return
  }
  func.func @main(%data: memref<4xi32>, %arena: memref<64xi8>) -> memref<4xi32> {
    %0 = arith.constant 0 : index
    %1 = memref.view %arena[%0][] : memref<64xi8> to memref<8xi32>
    %2 = arith.constant 32 : index
    %3 = memref.view %arena[%2][] : memref<64xi8> to memref<4xi32>
    %4 = memref.reinterpret_cast %1 to offset: [0], sizes: [2, 4], strides: [4, 1] : memref<8xi32> to memref<2x4xi32>
    %5 = memref.reinterpret_cast %data to offset: [0], sizes: [2, 4], strides: [0, 1] : memref<4xi32> to memref<2x4xi32, strided<[0, 1]>>
    cvm_sched.call @relu_cvm_right_shift(%4, %5) {work = 16 : i64} : memref<2x4xi32>, memref<2x4xi32, strided<[0, 1]>>
    cvm_sched.call @sum(%3, %4) {work = 8 : i64} : memref<4xi32>, memref<2x4xi32>
    func.return %3 : memref<4xi32>
  }
}

// CHECK-LABEL: func.func @relu_cvm_right_shift(%0: memref<2x4xi32>, %1: memref<2x4xi32, strided<[0, 1]>>) {
// CHECK-NOT:     cvm
// CHECK:         "scf.parallel"
// CHECK:           memref.load %1
// CHECK:           arith.maxsi
// CHECK:           arith.shrsi
// CHECK:           memref.store
// CHECK:       func.func @sum(%0: memref<4xi32>, %1: memref<2x4xi32>) {
// CHECK-NOT:     cvm
// CHECK:           scf.for
// CHECK:           memref.store
// CHECK-LABEL: func.func @main(%data: memref<4xi32>, %arena: memref<64xi8>) -> memref<4xi32> {
// CHECK:         cvm_sched.call @relu_cvm_right_shift(%4, %5) {work = 16 : i64}
// CHECK-NEXT:    cvm_sched.call @sum(%3, %4) {work = 8 : i64}
// CHECK-NEXT:    func.return %3 : memref<4xi32>

// -----

// A module not bufferized: the pipeline is the contract.

// CHECK: expected a bufferized module (a host @main over memrefs): run cvm-bufferize first, or the cvm-to-loops pipeline
func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>> {
  %0 = cvm.relu %data : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
  func.return %0 : tensor<4xi32, #cvm.prec<8>>
}

// -----

// An outlined kernel anchored by no cvm operator.

// CHECK: @k: expected a cvm operator or cvm_sched.pack to anchor the kernel, got arith.constant
builtin.module {
  func.func @k(%out: memref<4xi32>, %x: memref<4xi32>) {
    %0 = cvm_sched.load %x : memref<4xi32> -> tensor<4xi32, #cvm.prec<8>>
    %1 = arith.constant 0 : i32
    cvm_sched.store %0, %out : tensor<4xi32, #cvm.prec<8>>, memref<4xi32>
    func.return
  }
  func.func @main(%data: memref<4xi32>, %arena: memref<64xi8>) {
    cvm_sched.call @k(%data, %data) {work = 0 : i64} : memref<4xi32>, memref<4xi32>
    func.return
  }
}
