// RUN: not cvm-translate --import-cvm %S/../../data/cvm/invalid_000/model.json %S/../../data/cvm/invalid_000/params.bin 2>&1 | filecheck %s --check-prefix=LOAD
// RUN: not cvm-translate --export-cvm %s -o %t 2>&1 | filecheck %s --check-prefix=VERIFY
// RUN: not cvm-translate --import-cvm %S/missing.json %S/missing.bin 2>&1 | filecheck %s --check-prefix=MISSING

// Errors are a message on stderr, never a traceback (before or after it: a NOT before the first match checks
// from the start of the output).

// LOAD-NOT: Traceback
// LOAD: cvm-translate: CVMLogicError: node 1 ('clip_1') (clip): expected 'a_min' < 'a_max', got
// LOAD-NOT: Traceback

func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) -> tensor<5xi32, #cvm.prec<8>> {
  %0 = cvm.relu %data : (tensor<4xi32, #cvm.prec<8>>) -> tensor<5xi32, #cvm.prec<8>>
  func.return %0 : tensor<5xi32, #cvm.prec<8>>
}
// VERIFY-NOT: Traceback
// VERIFY: cvm-translate: CVMLogicError: cvm.relu: expected result 0 of shape [4], got [5]
// VERIFY-NOT: Traceback

// MISSING-NOT: Traceback
// MISSING: cvm-translate: CVMRuntimeError: {{.*}}missing.json
// MISSING-NOT: Traceback
