// RUN: python -m cvmc.codegen.llvm %s | filecheck %s

// scf.for: a header block whose phis carry the induction variable and the iter_args; scf.if: a merge block with
// phis; memref.alloca: a slot at the start of the entry block; a strided view: the static offset in the GEP.

func.func @sum_rows(%a: memref<4x8xi32, strided<[16, 2], offset: 5>>, %out: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0 : i32
  %tmp = memref.alloca() : memref<4xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    %s = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %z) -> (i32) {
      %x = memref.load %a[%i, %j] : memref<4x8xi32, strided<[16, 2], offset: 5>>
      %neg = arith.cmpi slt, %x, %z : i32
      %v = scf.if %neg -> (i32) {
        scf.yield %z : i32
      } else {
        scf.yield %x : i32
      }
      %next = arith.addi %acc, %v : i32
      scf.yield %next : i32
    }
    memref.store %s, %tmp[%i] : memref<4xi32>
  }
  "memref.copy"(%tmp, %out) : (memref<4xi32>, memref<4xi32>) -> ()
  func.return
}

// CHECK-LABEL: define internal void @"__cvmc_body.sum_rows"
// CHECK:       entry:
// CHECK-NEXT:    %[[TMP:.+]] = alloca [16 x i8], align 64
// CHECK:       for.cond:
// CHECK-NEXT:    %"iv" = phi i64 [0, %"body"], [%{{.+}}, %"for.end"]
// CHECK-NEXT:    %[[C:.+]] = icmp slt i64 %"iv", 4
// CHECK-NEXT:    br i1 %[[C]], label %"for.body", label %"for.end.1"
// CHECK:       for.cond.1:
// CHECK-NEXT:    %"iv.1" = phi i64 [0, %"for.body"], [%[[IVN:.+]], %"if.end"]
// CHECK-NEXT:    %[[ACC:.+]] = phi i32 [0, %"for.body"], [%[[NEXT:.+]], %"if.end"]
// CHECK:       for.body.1:
// CHECK-NEXT:    %[[ROW:.+]] = mul nsw i64 %"iv", 16
// CHECK-NEXT:    %[[COL:.+]] = mul nsw i64 %"iv.1", 2
// CHECK-NEXT:    %[[SUM:.+]] = add nsw i64 %[[ROW]], %[[COL]]
// CHECK-NEXT:    %[[LIN:.+]] = add nsw i64 %[[SUM]], 5
// CHECK-NEXT:    %[[P:.+]] = getelementptr inbounds i32, ptr %"arg0", i64 %[[LIN]]
// CHECK-NEXT:    %[[X:.+]] = load i32, ptr %[[P]], align 4
// CHECK-NEXT:    %[[NEG:.+]] = icmp slt i32 %[[X]], 0
// CHECK-NEXT:    br i1 %[[NEG]], label %"if.then", label %"if.else"
// CHECK:       if.end:
// CHECK-NEXT:    %[[V:.+]] = phi i32 [0, %"if.then"], [%[[X]], %"if.else"]
// CHECK-NEXT:    %[[NEXT]] = add i32 %[[ACC]], %[[V]]
// CHECK-NEXT:    %[[IVN]] = add nsw i64 %"iv.1", 1
// CHECK-NEXT:    br label %"for.cond.1"
// CHECK:       for.end:
// CHECK-NEXT:    %[[Q:.+]] = getelementptr inbounds i32, ptr %[[TMP]], i64 %"iv"
// CHECK-NEXT:    store i32 %[[ACC]], ptr %[[Q]], align 4
// CHECK:       for.end.1:
// CHECK:         call void @"llvm.memcpy.p0.p0.i64"(ptr %{{.+}}, ptr %{{.+}}, i64 16, i1 false)
