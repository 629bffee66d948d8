/* The CPU features a model's object needs, against those this CPU and OS give (x86-64: CPUID and XGETBV).
 *
 * `cvm-aot build` records in each object the LLVM features it was compiled with ("+avx2,+fma,-xop,..."): this
 * machine's own, or, for `--cpu NAME`, the features the C compiler gives that CPU. The library refuses an object
 * needing a feature this machine lacks before any call (status 2), rather than die of SIGILL in a kernel. The
 * names it can check are `cvmc_cpu_features` (cvmc.runtime.aot.CHECKED_FEATURES holds the same list); a `+name`
 * outside them is ignored, except names of instruction families that code may use but this table does not know
 * (a prefix "avx", "amx" or "apx", and APX's "egpr", "ndd", ...), which are refused as unknown.
 */
#ifndef CVMC_CPU_H_
#define CVMC_CPU_H_

#include <stddef.h>

/* The `+` features of `features` that this CPU lacks or this library cannot check, space-separated into `out`
 * (empty when none). */
void cvmc_missing_features(const char *features, char *out, size_t n);

/* 1 when this CPU and OS give the LLVM feature `name`, 0 when not, -1 when the library does not know it. */
int cvmc_cpu_has(const char *name);

#endif  /* CVMC_CPU_H_ */
