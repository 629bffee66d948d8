// RUN: cvm-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// One case per rule of the target attribute `#cvmc.target<...>`, each bound one past it (`target.mlir` has each
// at the bound). Attributes are verified as they are built, so the verifier's message comes from the parser
// (--parsing-diagnostics: each case reports and the next one runs).

builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx512">} {}
// CHECK: expected 'tier' in generic, avx2, avx512-vnni, amx, got 'avx512'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, vector_bytes = 8>} {}
// CHECK: expected 'vector_bytes' in 16, 32, 64, got 8

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, vector_bytes = 128>} {}
// CHECK: expected 'vector_bytes' in 16, 32, 64, got 128

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, vector_bytes = 48>} {}
// CHECK: expected 'vector_bytes' in 16, 32, 64, got 48

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, cpu = "Znver3">} {}
// CHECK: expected 'cpu' an LLVM CPU name (lowercase letters, digits, '_', '.', '-') or empty, got 'Znver3'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, features = "+avx2,fma">} {}
// CHECK: expected 'features' a list of +name and -name joined by commas, got 'fma' in '+avx2,fma'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, features = "+avx2,">} {}
// CHECK: expected 'features' a list of +name and -name joined by commas, got '' in '+avx2,'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "sm_60">} {}
// CHECK: expected 'arch' any or sm_NN (NN >= 61, two or three digits), got 'sm_60'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "sm_1000">} {}
// CHECK: expected 'arch' any or sm_NN (NN >= 61, two or three digits), got 'sm_1000'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "90">} {}
// CHECK: expected 'arch' any or sm_NN (NN >= 61, two or three digits), got '90'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<cuda>} {}
// CHECK: expected the field 'arch' of a cuda target

// -----
builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "sm_90", tier = "avx2">} {}
// CHECK: expected a field of the cuda target in arch, got 'tier'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, arch = "sm_90">} {}
// CHECK: expected a field of the x86 target in tier, mmk, emulated, vector_bytes, cpu, features, got 'arch'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, mmk = false, mmk = true>} {}
// CHECK: expected each target field once, got 'mmk' twice

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, mmk = 1>} {}
// CHECK: Expected boolean literal as 'mmk'

// -----
builtin.module attributes {cvmc.target = #cvmc.target<arm>} {}
// CHECK: as the kind of target
