// RUN: python -m cvmc.codegen.llvm %s | filecheck %s

// Total integer semantics without branches: the divisor is replaced by 1 where it is 0 or where INT_MIN / -1
// overflows, and the quotient by 0 where the divisor was 0; shifts select 0 (or clamp the amount) out of range.

func.func @div(%a: memref<i64>, %b: memref<i64>, %q: memref<i64>, %r: memref<i64>) {
  %x = memref.load %a[] : memref<i64>
  %y = memref.load %b[] : memref<i64>
  %d = arith.divsi %x, %y : i64
  memref.store %d, %q[] : memref<i64>
  %m = arith.remsi %x, %y : i64
  memref.store %m, %r[] : memref<i64>
  func.return
}

// CHECK-LABEL: define internal void @"__cvmc_body.div"
// CHECK:         %[[X:.+]] = load i64, ptr %"arg0", align 8
// CHECK-NEXT:    %[[Y:.+]] = load i64, ptr %"arg1", align 8
// CHECK-NEXT:    %[[ZERO:.+]] = icmp eq i64 %[[Y]], 0
// CHECK-NEXT:    %[[MIN:.+]] = icmp eq i64 %[[X]], -9223372036854775808
// CHECK-NEXT:    %[[M1:.+]] = icmp eq i64 %[[Y]], -1
// CHECK-NEXT:    %[[OVF:.+]] = and i1 %[[MIN]], %[[M1]]
// CHECK-NEXT:    %[[BAD:.+]] = or i1 %[[ZERO]], %[[OVF]]
// CHECK-NEXT:    %[[SAFE:.+]] = select i1 %[[BAD]], i64 1, i64 %[[Y]]
// CHECK-NEXT:    %[[QUO:.+]] = sdiv i64 %[[X]], %[[SAFE]]
// CHECK-NEXT:    %[[RES:.+]] = select i1 %[[ZERO]], i64 0, i64 %[[QUO]]
// CHECK-NEXT:    store i64 %[[RES]], ptr %"arg2", align 8
// CHECK:         %[[SAFE2:.+]] = select i1 %{{.+}}, i64 1, i64 %[[Y]]
// CHECK-NEXT:    %[[REM:.+]] = srem i64 %[[X]], %[[SAFE2]]
// CHECK-NEXT:    store i64 %[[REM]], ptr %"arg3", align 8

// Up to 32 bits, a division by a variable is done exactly in floating point (it vectorizes); by a constant it
// stays an integer division (LLVM turns it into a multiplication).
func.func @div32(%a: memref<i32>, %b: memref<i32>, %q: memref<i32>, %r: memref<i32>) {
  %x = memref.load %a[] : memref<i32>
  %y = memref.load %b[] : memref<i32>
  %d = arith.divui %x, %y : i32
  memref.store %d, %q[] : memref<i32>
  %seven = arith.constant 7 : i32
  %m = arith.remsi %x, %seven : i32
  memref.store %m, %r[] : memref<i32>
  func.return
}

// CHECK-LABEL: define internal void @"__cvmc_body.div32"
// CHECK:         %[[ZERO:.+]] = icmp eq i32 %[[Y:.+]], 0
// CHECK-NEXT:    %[[SAFE:.+]] = select i1 %[[ZERO]], i32 1, i32 %[[Y]]
// CHECK-NEXT:    %[[FX:.+]] = uitofp i32 %[[X:.+]] to double
// CHECK-NEXT:    %[[FY:.+]] = uitofp i32 %[[SAFE]] to double
// CHECK-NEXT:    %[[FQ:.+]] = fdiv double %[[FX]], %[[FY]]
// CHECK-NEXT:    %[[Q:.+]] = fptoui double %[[FQ]] to i32
// CHECK-NEXT:    %{{.+}} = select i1 %[[ZERO]], i32 0, i32 %[[Q]]
// CHECK:         %{{.+}} = srem i32 %[[X]], %{{.+}}

func.func @shifts(%a: memref<i8>, %b: memref<i8>, %l: memref<i8>, %s: memref<i8>) {
  %x = memref.load %a[] : memref<i8>
  %y = memref.load %b[] : memref<i8>
  %shl = arith.shli %x, %y : i8
  memref.store %shl, %l[] : memref<i8>
  %sra = arith.shrsi %x, %y : i8
  memref.store %sra, %s[] : memref<i8>
  func.return
}

// CHECK-LABEL: define internal void @"__cvmc_body.shifts"
// CHECK:         %[[IN:.+]] = icmp ult i8 %[[Y:.+]], 8
// CHECK-NEXT:    %[[SHL:.+]] = shl i8 %[[X:.+]], %[[Y]]
// CHECK-NEXT:    %{{.+}} = select i1 %[[IN]], i8 %[[SHL]], i8 0
// CHECK:         %[[IN2:.+]] = icmp ult i8 %[[Y]], 8
// CHECK-NEXT:    %[[AMT:.+]] = select i1 %[[IN2]], i8 %[[Y]], i8 7
// CHECK-NEXT:    %{{.+}} = ashr i8 %[[X]], %[[AMT]]

// i1 is a byte in memory: loads compare with 0, stores zero-extend.
func.func @bools(%a: memref<4xi1>, %b: memref<4xi1>) {
  %c2 = arith.constant 2 : index
  %x = memref.load %a[%c2] : memref<4xi1>
  %t = arith.constant true
  %y = arith.xori %x, %t : i1
  memref.store %y, %b[%c2] : memref<4xi1>
  func.return
}

// CHECK-LABEL: define internal void @"__cvmc_body.bools"
// CHECK:         %[[P:.+]] = getelementptr inbounds i8, ptr %"arg0", i64 2
// CHECK-NEXT:    %[[BYTE:.+]] = load i8, ptr %[[P]], align 1
// CHECK-NEXT:    %[[BIT:.+]] = icmp ne i8 %[[BYTE]], 0
// CHECK-NEXT:    %[[NOT:.+]] = xor i1 %[[BIT]], true
// CHECK-NEXT:    %[[WIDE:.+]] = zext i1 %[[NOT]] to i8
// CHECK-NEXT:    %{{.+}} = getelementptr inbounds i8, ptr %"arg1", i64 2
// CHECK:         store i8 %[[WIDE]], ptr %{{.+}}, align 1

// Float to int saturates; math maps to intrinsics or libm calls.
func.func @floats(%a: memref<f32>, %b: memref<i32>, %c: memref<f32>) {
  %x = memref.load %a[] : memref<f32>
  %i = arith.fptosi %x : f32 to i32
  memref.store %i, %b[] : memref<i32>
  %r = math.round %x : f32
  %e = math.erf %r : f32
  memref.store %e, %c[] : memref<f32>
  func.return
}

// CHECK-LABEL: define internal void @"__cvmc_body.floats"
// CHECK:         call i32 @"llvm.fptosi.sat.i32.f32"(float %{{.+}})
// CHECK:         %[[R:.+]] = call float @"llvm.round.f32"(float %{{.+}})
// CHECK-NEXT:    call float @"erff"(float %[[R]])
// CHECK:       declare float @"erff"(float %{{.+}}) nounwind readnone
