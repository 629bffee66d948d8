// RUN: cvm-opt %s --split-input-file | cvm-opt --split-input-file | filecheck %s

// The target attribute `#cvmc.target<...>` (what the loop level and code generation build for, on a module as
// `cvmc.target`) round-trips: an x86 CPU's fields in any order, absent ones at their defaults, printed in one
// order (cpu and features when not empty); each bound of its verifier at the bound (`target-invalid.mlir` has
// one past it).

builtin.module attributes {cvmc.target = #cvmc.target<x86>} {}
// CHECK: builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx2", mmk = true, emulated = false, vector_bytes = 32>}

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, vector_bytes = 16, tier = "generic", emulated = true, mmk = false>} {}
// CHECK: builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "generic", mmk = false, emulated = true, vector_bytes = 16>}

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "amx", mmk = true, emulated = false, vector_bytes = 64, cpu = "x86-64-v4", features = "+avx512f,+amx-int8,-prefer-256-bit,+sse4.1">} {}
// CHECK: builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "amx", mmk = true, emulated = false, vector_bytes = 64, cpu = "x86-64-v4", features = "+avx512f,+amx-int8,-prefer-256-bit,+sse4.1">}

// -----
builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx512-vnni", cpu = "znver4">} {}
// CHECK: builtin.module attributes {cvmc.target = #cvmc.target<x86, tier = "avx512-vnni", mmk = true, emulated = false, vector_bytes = 32, cpu = "znver4">}

// -----
builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "sm_61">} {}
// CHECK: builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "sm_61">}

// -----
builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "sm_999">, a = #cvmc.target<cuda, arch = "sm_90a">, b = #cvmc.target<cuda, arch = "any">} {}
// CHECK: builtin.module attributes {cvmc.target = #cvmc.target<cuda, arch = "sm_999">, a = #cvmc.target<cuda, arch = "sm_90a">, b = #cvmc.target<cuda, arch = "any">}
