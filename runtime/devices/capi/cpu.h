/* The CPU features a model's object needs, against those this CPU and OS give (x86-64: CPUID and XGETBV).
 *
 * `cvm-aot build` records in each object the LLVM features it was compiled with ("+avx2,+fma,-xop,..."): this
 * machine's own, or, for `--cpu NAME`, the features the C compiler gives that CPU. The library refuses an object
 * needing a feature this machine lacks before any call (status 2), rather than die of SIGILL in a kernel. The
 * names it can check are `cvmc_cpu_features` (cvmc.runtime.devices.aot.CHECKED_FEATURES holds the same list); a `+name`
 * outside them is ignored, except names of instruction families that code may use but this table does not know
 * (a prefix "avx", "amx" or "apx", and APX's "egpr", "ndd", ...), which are refused as unknown.
 *
 * $CVMC_CPU_MASK (a test and override knob): LLVM feature names, comma-separated, that the library treats as
 * absent on this CPU, e.g. "avx512f" (an object of `--target all` then runs its avx2 tier on an AVX-512 CPU) or
 * "avx2" (its generic tier). It only ever takes features away, so it cannot make a kernel run that this CPU
 * lacks; a name the library does not check refuses every load (status 2), so a typo is not silently ignored.
 */
#ifndef CVMC_CPU_H_
#define CVMC_CPU_H_

#include <stddef.h>

/* The `+` features of `features` that this CPU lacks or this library cannot check, space-separated into `out`
 * (empty when none). */
void cvmc_missing_features(const char *features, char *out, size_t n);

/* 1 when this CPU and OS give the LLVM feature `name` (and $CVMC_CPU_MASK does not name it), 0 when not, -1 when
 * the library does not know it. */
int cvmc_cpu_has(const char *name);

/* 0 when $CVMC_CPU_MASK is unset or names only features the library checks; else -1 and the first other name
 * (truncated to `n` bytes) in `bad`. */
int cvmc_cpu_mask_check(char *bad, size_t n);

#endif  /* CVMC_CPU_H_ */
