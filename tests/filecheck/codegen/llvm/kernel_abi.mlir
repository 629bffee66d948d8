// RUN: python -m cvmc.codegen.llvm %s | filecheck %s

// A kernel whose top level is one scf.parallel: units are iterations of its first dimension, clamped to
// [0, trip); arguments are noalias base pointers of the internal, noinline body; addresses are one GEP, the loop a
// header block with a phi. The exported kernel takes one array of the pointers, loads them and calls the body.

func.func @add(%a: memref<16x8xi32>, %b: memref<16x8xi32>, %c: memref<16x8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  "scf.parallel"(%c0, %c0, %c16, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %x = memref.load %a[%i, %j] : memref<16x8xi32>
    %y = memref.load %b[%i, %j] : memref<16x8xi32>
    %s = arith.addi %x, %y : i32
    memref.store %s, %c[%i, %j] : memref<16x8xi32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// CHECK:      define internal void @"__cvmc_body.add"(ptr captures(none) noalias align 4 dereferenceable(512) %"arg0", ptr captures(none) noalias align 4 dereferenceable(512) %"arg1", ptr captures(none) noalias align 4 dereferenceable(512) %"arg2", i64 %"begin", i64 %"end") noinline nounwind
// CHECK:      entry:
// CHECK-NEXT:   %[[GT:.+]] = icmp sgt i64 %"begin", 0
// CHECK-NEXT:   %"first" = select i1 %[[GT]], i64 %"begin", i64 0
// CHECK-NEXT:   %[[LT:.+]] = icmp slt i64 %"end", 16
// CHECK-NEXT:   %"last" = select i1 %[[LT]], i64 %"end", i64 16
// CHECK:      par.cond:
// CHECK-NEXT:   %"iv" = phi i64 [%"first", %"entry"], [%[[NEXT:.+]], %"par.end"]
// CHECK-NEXT:   %{{.+}} = icmp slt i64 %"iv", %"last"
// CHECK:      par.body.1:
// CHECK-NEXT:   %[[ROW:.+]] = mul nsw i64 %"iv", 8
// CHECK-NEXT:   %[[LIN:.+]] = add nsw i64 %[[ROW]], %"iv.1"
// CHECK-NEXT:   %[[PA:.+]] = getelementptr inbounds i32, ptr %"arg0", i64 %[[LIN]]
// CHECK-NEXT:   %{{.+}} = load i32, ptr %[[PA]], align 4
// CHECK:        store i32 %{{.+}}, ptr %{{.+}}, align 4
// CHECK-NOT:  ptrtoint
// CHECK:      define void @"add"(ptr captures(none) align 8 dereferenceable(24) %"args", i64 %"begin", i64 %"end") nounwind
// CHECK-NEXT: {
// CHECK-NEXT: entry:
// CHECK-NEXT:   %"arg0" = load ptr, ptr %"args", align 8
// CHECK-NEXT:   %[[P1:.+]] = getelementptr inbounds ptr, ptr %"args", i64 1
// CHECK-NEXT:   %"arg1" = load ptr, ptr %[[P1]], align 8
// CHECK-NEXT:   %[[P2:.+]] = getelementptr inbounds ptr, ptr %"args", i64 2
// CHECK-NEXT:   %"arg2" = load ptr, ptr %[[P2]], align 8
// CHECK-NEXT:   tail call void @"__cvmc_body.add"(ptr %"arg0", ptr %"arg1", ptr %"arg2", i64 %"begin", i64 %"end")
// CHECK-NEXT:   ret void


// Any other kernel is one unit, run when 0 is in [begin, end).

func.func @one_unit(%a: memref<i32>) {
  %x = memref.load %a[] : memref<i32>
  %y = arith.addi %x, %x : i32
  memref.store %y, %a[] : memref<i32>
  func.return
}

// CHECK:      define internal void @"__cvmc_body.one_unit"(ptr captures(none) noalias align 4 dereferenceable(4) %"arg0", i64 %"begin", i64 %"end")
// CHECK:        %[[B:.+]] = icmp sle i64 %"begin", 0
// CHECK-NEXT:   %[[E:.+]] = icmp sgt i64 %"end", 0
// CHECK-NEXT:   %[[GO:.+]] = and i1 %[[B]], %[[E]]
// CHECK-NEXT:   br i1 %[[GO]], label %"body", label %"done"
// CHECK:      body:
// CHECK-NEXT:   %{{.+}} = load i32, ptr %"arg0", align 4
