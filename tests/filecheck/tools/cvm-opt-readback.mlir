// RUN: cvm-opt %S/../passes/convert-cvm-to-loops-vnni-mmk.mlir -p "cvm-to-loops{target=\"x86:avx512-vnni\"}" --split-input-file -o %t.mlir
// RUN: cvm-opt %t.mlir --split-input-file -t llvm-ir | filecheck %s
// RUN: cvm-opt %S/../passes/convert-cvm-to-loops-vnni.mlir -p "cvm-to-loops{target=\"x86:avx512-vnni,no-mmk\"}" --split-input-file -o %t.dot.mlir
// RUN: cvm-opt %t.dot.mlir --split-input-file -t llvm-ir | filecheck %s --check-prefix=DOT
// RUN: sed 's/tier = "avx512-vnni"/tier = "avx9"/' %t.mlir | not cvm-opt --split-input-file -t llvm-ir 2>&1 | filecheck %s --check-prefix=BAD

// A lowered module, written to a file, reads back and prints: the micro-kernel ops (`cvmc.mmk_u8s8`,
// `cvmc.dot_u8s8`, `cvmc.pack_tile`) are registered ops of the cvmc dialect (tests/passes/test_stage_readback.py
// checks that the code is the one the compile itself prints, on every target).

// CHECK: define internal void @"__cvmc_mmk_vnni_r4_l32"(
// DOT:   call <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"
// BAD:   expected 'tier' in generic, avx2, avx512-vnni, amx, got 'avx9'
