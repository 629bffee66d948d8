/* CPU features by CPUID and XGETBV (see cpu.h). */
#include "cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* The register state a feature's instructions need the OS to save (XCR0 bits). */
enum { OS_NONE = 0, OS_AVX = 0x6, OS_AVX512 = 0xe6, OS_AMX = 0x60006, OS_APX = 0x80006 };

struct feature {
  const char *name;  /* LLVM's */
  uint32_t leaf, subleaf;
  uint8_t reg;  /* 0 eax, 1 ebx, 2 ecx, 3 edx */
  uint8_t bit;
  uint32_t os;
};

static const struct feature table[] = {
    {"cmov", 1, 0, 3, 15, OS_NONE}, {"cx8", 1, 0, 3, 8, OS_NONE}, {"mmx", 1, 0, 3, 23, OS_NONE},
    {"fxsr", 1, 0, 3, 24, OS_NONE}, {"sse", 1, 0, 3, 25, OS_NONE}, {"sse2", 1, 0, 3, 26, OS_NONE},
    {"sse3", 1, 0, 2, 0, OS_NONE}, {"pclmul", 1, 0, 2, 1, OS_NONE}, {"ssse3", 1, 0, 2, 9, OS_NONE},
    {"fma", 1, 0, 2, 12, OS_AVX}, {"cx16", 1, 0, 2, 13, OS_NONE}, {"sse4.1", 1, 0, 2, 19, OS_NONE},
    {"sse4.2", 1, 0, 2, 20, OS_NONE}, {"crc32", 1, 0, 2, 20, OS_NONE}, {"movbe", 1, 0, 2, 22, OS_NONE},
    {"popcnt", 1, 0, 2, 23, OS_NONE}, {"aes", 1, 0, 2, 25, OS_NONE}, {"xsave", 1, 0, 2, 26, OS_NONE},
    {"avx", 1, 0, 2, 28, OS_AVX}, {"f16c", 1, 0, 2, 29, OS_AVX}, {"rdrnd", 1, 0, 2, 30, OS_NONE},
    {"fsgsbase", 7, 0, 1, 0, OS_NONE}, {"bmi", 7, 0, 1, 3, OS_NONE}, {"avx2", 7, 0, 1, 5, OS_AVX},
    {"bmi2", 7, 0, 1, 8, OS_NONE}, {"invpcid", 7, 0, 1, 10, OS_NONE}, {"rtm", 7, 0, 1, 11, OS_NONE},
    {"avx512f", 7, 0, 1, 16, OS_AVX512}, {"avx512dq", 7, 0, 1, 17, OS_AVX512}, {"rdseed", 7, 0, 1, 18, OS_NONE},
    {"adx", 7, 0, 1, 19, OS_NONE}, {"avx512ifma", 7, 0, 1, 21, OS_AVX512}, {"clflushopt", 7, 0, 1, 23, OS_NONE},
    {"clwb", 7, 0, 1, 24, OS_NONE}, {"avx512cd", 7, 0, 1, 28, OS_AVX512}, {"sha", 7, 0, 1, 29, OS_NONE},
    {"avx512bw", 7, 0, 1, 30, OS_AVX512}, {"avx512vl", 7, 0, 1, 31, OS_AVX512},
    {"prefetchwt1", 7, 0, 2, 0, OS_NONE}, {"avx512vbmi", 7, 0, 2, 1, OS_AVX512}, {"pku", 7, 0, 2, 3, OS_NONE},
    {"waitpkg", 7, 0, 2, 5, OS_NONE}, {"avx512vbmi2", 7, 0, 2, 6, OS_AVX512}, {"shstk", 7, 0, 2, 7, OS_NONE},
    {"gfni", 7, 0, 2, 8, OS_NONE}, {"vaes", 7, 0, 2, 9, OS_AVX}, {"vpclmulqdq", 7, 0, 2, 10, OS_AVX},
    {"avx512vnni", 7, 0, 2, 11, OS_AVX512}, {"avx512bitalg", 7, 0, 2, 12, OS_AVX512},
    {"avx512vpopcntdq", 7, 0, 2, 14, OS_AVX512}, {"rdpid", 7, 0, 2, 22, OS_NONE}, {"kl", 7, 0, 2, 23, OS_NONE},
    {"cldemote", 7, 0, 2, 25, OS_NONE}, {"movdiri", 7, 0, 2, 27, OS_NONE}, {"movdir64b", 7, 0, 2, 28, OS_NONE},
    {"enqcmd", 7, 0, 2, 29, OS_NONE}, {"uintr", 7, 0, 3, 5, OS_NONE},
    {"avx512vp2intersect", 7, 0, 3, 8, OS_AVX512}, {"serialize", 7, 0, 3, 14, OS_NONE},
    {"tsxldtrk", 7, 0, 3, 16, OS_NONE}, {"pconfig", 7, 0, 3, 18, OS_NONE}, {"amx-bf16", 7, 0, 3, 22, OS_AMX},
    {"avx512fp16", 7, 0, 3, 23, OS_AVX512}, {"amx-tile", 7, 0, 3, 24, OS_AMX}, {"amx-int8", 7, 0, 3, 25, OS_AMX},
    {"sha512", 7, 1, 0, 0, OS_AVX}, {"sm3", 7, 1, 0, 1, OS_AVX}, {"sm4", 7, 1, 0, 2, OS_AVX},
    {"raoint", 7, 1, 0, 3, OS_NONE}, {"avxvnni", 7, 1, 0, 4, OS_AVX}, {"avx512bf16", 7, 1, 0, 5, OS_AVX512},
    {"cmpccxadd", 7, 1, 0, 7, OS_NONE}, {"amx-fp16", 7, 1, 0, 21, OS_AMX}, {"hreset", 7, 1, 0, 22, OS_NONE},
    {"avxifma", 7, 1, 0, 23, OS_AVX}, {"avxvnniint8", 7, 1, 3, 4, OS_AVX}, {"avxneconvert", 7, 1, 3, 5, OS_AVX},
    {"amx-complex", 7, 1, 3, 8, OS_AMX}, {"avxvnniint16", 7, 1, 3, 10, OS_AVX}, {"prefetchi", 7, 1, 3, 14, OS_NONE},
    {"usermsr", 7, 1, 3, 15, OS_NONE}, {"xsaveopt", 0xd, 1, 0, 0, OS_NONE}, {"xsavec", 0xd, 1, 0, 1, OS_NONE},
    {"xsaves", 0xd, 1, 0, 3, OS_NONE}, {"sahf", 0x80000001u, 0, 2, 0, OS_NONE},
    {"lzcnt", 0x80000001u, 0, 2, 5, OS_NONE}, {"sse4a", 0x80000001u, 0, 2, 6, OS_NONE},
    {"prfchw", 0x80000001u, 0, 2, 8, OS_NONE}, {"xop", 0x80000001u, 0, 2, 11, OS_AVX},
    {"lwp", 0x80000001u, 0, 2, 15, OS_NONE}, {"fma4", 0x80000001u, 0, 2, 16, OS_AVX},
    {"tbm", 0x80000001u, 0, 2, 21, OS_NONE}, {"mwaitx", 0x80000001u, 0, 2, 29, OS_NONE},
    {"64bit", 0x80000001u, 0, 3, 29, OS_NONE}, {"clzero", 0x80000008u, 0, 1, 0, OS_NONE},
    {"wbnoinvd", 0x80000008u, 0, 1, 9, OS_NONE},
};

/* Names of instruction families, and APX's parts, that code may use: unknown ones are refused, not ignored. */
static const char *const families[] = {"avx", "amx", "apx", "egpr", "push2pop2", "ppx", "ndd", "ccmp", "nf", "cf",
                                       "zu", "avx10"};

static int has_bit(uint32_t leaf, uint32_t subleaf, int reg, int bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (__get_cpuid_max(leaf & 0x80000000u, NULL) < leaf)
    return 0;
  __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
  return (r[reg] >> bit) & 1;
}

static uint64_t os_state(void) {
  if (!has_bit(1, 0, 2, 27))  /* OSXSAVE */
    return 0;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t)hi << 32 | lo;
}

/* Whether this process may use AMX tiles: Linux grants the tile data state to a process that asks for it
 * (arch_prctl ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18; asking again is harmless). Without it the
 * first tile instruction raises SIGILL, though CPUID and XCR0 say AMX is there. */
static int amx_permitted(void) {
#if defined(__linux__)
  return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
  return 0;
#endif
}

static const struct feature *find(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (strlen(table[i].name) == len && strncmp(name, table[i].name, len) == 0)
      return &table[i];
  return NULL;
}

/* Call `fn` on each name of $CVMC_CPU_MASK (not NUL-terminated: a pointer and a length) until it returns
 * non-zero; returns that value, or 0. */
static int each_masked(int (*fn)(const char *name, size_t len, void *arg), void *arg) {
  const char *mask = getenv("CVMC_CPU_MASK");
  if (mask == NULL || mask[0] == 0)
    return 0;
  for (const char *p = mask; p != NULL;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    int r = fn(p, len, arg);
    if (r != 0)
      return r;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static int is_name(const char *name, size_t len, void *arg) {
  return strlen((const char *)arg) == len && strncmp(name, (const char *)arg, len) == 0;
}

struct unknown { char *out; size_t n; };

static int is_unknown(const char *name, size_t len, void *arg) {
  if (find(name, len) != NULL)
    return 0;
  struct unknown *u = arg;
  snprintf(u->out, u->n, "%.*s", (int)len, name);
  return -1;
}

int cvmc_cpu_mask_check(char *bad, size_t n) {
  struct unknown u = {bad, n};
  return each_masked(is_unknown, &u);
}

int cvmc_cpu_has(const char *name) {
  const struct feature *f = find(name, strlen(name));
  if (f == NULL)
    return -1;
  if (each_masked(is_name, (void *)name))
    return 0;
  return has_bit(f->leaf, f->subleaf, f->reg, f->bit) && (os_state() & f->os) == f->os &&
         (f->os != OS_AMX || amx_permitted());
}

static int is_family(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof families / sizeof families[0]; ++i) {
    size_t k = strlen(families[i]);
    if (len >= k && strncmp(name, families[i], k) == 0 && (len == k || k >= 3))
      return 1;
  }
  return 0;
}

void cvmc_missing_features(const char *features, char *out, size_t n) {
  out[0] = 0;
  for (const char *p = features; p != NULL && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char name[64];
    if (p[0] == '+' && len - 1 < sizeof name) {
      memcpy(name, p + 1, len - 1);
      name[len - 1] = 0;
      int has = cvmc_cpu_has(name);
      if ((has == 0 || (has < 0 && is_family(name, len - 1))) && strlen(out) + len + 1 < n) {
        strcat(out, out[0] ? " " : "");
        strcat(out, name);
      }
    }
    p = end ? end + 1 : NULL;
  }
}

#else

int cvmc_cpu_has(const char *name) {
  (void)name;
  return -1;
}

void cvmc_missing_features(const char *features, char *out, size_t n) {
  (void)features;
  (void)n;
  out[0] = 0;
}

int cvmc_cpu_mask_check(char *bad, size_t n) {
  (void)bad;
  (void)n;
  return 0;
}

#endif
