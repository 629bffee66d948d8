/* What a model's shared object holds, as the C-API library reads it: the host programs as data.
 *
 * `cvm-aot build` (cvmc.runtime.devices.aot) writes, for one verified model, a shared object exporting one symbol,
 * `cvmc_object_v2`, a `struct cvmc_object`: one or more tiers (`--target all`: amx, avx512-vnni, avx2, generic;
 * any other target: one), best first, each with its kernels (the JIT's LLVM IR for that tier, compiled to
 * position-independent code for the tier's CPU), the features they need, and two host programs as tables: the
 * model's, and the known-answer model's (a small fixed conv model, runtime/driver/target.py), whose heads on a fixed
 * input the object holds as the reference interpreter computed them at build time. A host program
 * (`cvmc.runtime.devices.cpu.HostProgram`) is:
 *
 *   - three roots of memory: the arena (`arena_bytes`, allocated per net, 64-byte aligned, zeroed), the input
 *     (`input_size` int32 values, per net) and the params (`params`, read only, inside the object; one blob that
 *     every host program of the object shares);
 *   - the calls, in order: `kernel(args + first_arg, begin, end)` where the argument table holds, for each memref
 *     the kernel takes, its base pointer as a root and a byte shift; a call whose `split` is set may be cut into
 *     contiguous ranges of [0, trip) run on several threads at once (the result never depends on it);
 *   - the heads: strided views (in int32 elements) of a root, copied out after the calls;
 *   - what the C API reports and how it packs the heads (CVMModel: lengths, type sizes, postprocess, gas).
 *
 * The library runs the first tier whose features this CPU has (cpu.h) and whose known-answer model gives the
 * recorded heads in this process (checked once a process per tier; a tier that fails is not run again).
 *
 * Every argument and head was checked at build time against its kernel's layout, as the JIT checks them
 * (`cvmc.runtime.engine.jit.check_arguments`): a base pointer plus the layout's span stays inside its root, and no
 * written argument overlaps another. The library trusts the tables of an object whose store entry carries a valid
 * tag (see store.c), and nothing else.
 */
#ifndef CVMC_MODEL_H_
#define CVMC_MODEL_H_

#include <stdint.h>

#define CVMC_MODEL_ABI 2
#define CVMC_OBJECT_SYMBOL "cvmc_object_v2"

/* Every kernel: `void name(void **args, int64_t begin, int64_t end)` runs its units [begin, end) of [0, trip). */
typedef void (*cvmc_kernel)(void **args, int64_t begin, int64_t end);

enum cvmc_root { CVMC_ROOT_ARENA = 0, CVMC_ROOT_INPUT = 1, CVMC_ROOT_PARAMS = 2, CVMC_ROOTS = 3 };

/* What CVMModel::SaveTensor does with the heads (model.cc:150). */
enum cvmc_post { CVMC_POST_NONE = 0, CVMC_POST_ARGMAX = 1, CVMC_POST_DETECTION = 2 };

struct cvmc_arg {
  uint32_t root;   /* enum cvmc_root */
  uint64_t shift;  /* bytes from the root's start to the memref's base pointer */
};

struct cvmc_call {
  cvmc_kernel kernel;
  const char *name;
  int64_t trip;        /* the kernel's units */
  uint32_t split;      /* 1: large enough to be cut over the threads (the JIT's rule) */
  uint32_t first_arg;  /* its arguments: args[first_arg .. first_arg + nargs) */
  uint32_t nargs;
};

struct cvmc_head {
  uint32_t root;           /* enum cvmc_root */
  uint64_t shift;          /* bytes from the root's start to the view's base pointer */
  int64_t offset;          /* int32 elements from the base pointer to element 0 */
  uint32_t ndim;
  const int64_t *shape;    /* the head's shape */
  const int64_t *strides;  /* in int32 elements */
  uint64_t size;           /* the product of the shape */
};

/* A host program: the model's (with what the API reports), or the known-answer model's (those fields 0). */
struct cvmc_model {
  const char *version;        /* the graph's version ("cvm_1.0.0") */
  const char *postprocess;    /* the graph's postprocess text ("" when it has none) */
  uint32_t post;              /* enum cvmc_post */
  uint64_t gas;               /* CVMAPIGetGasFromModel */
  uint64_t storage_size;      /* CVMAPIGetStorageSize */
  uint64_t input_length;      /* CVMAPIGetInputLength: bytes of the API's input */
  uint64_t output_length;     /* CVMAPIGetOutputLength */
  uint32_t input_type_size;   /* 1 (int8) or 4 (int32) */
  uint32_t output_type_size;
  uint64_t input_size;        /* int32 values of the input `data` */
  int32_t input_bound;        /* inputs are saturated to [-bound, bound] (the input's precision) */
  uint64_t arena_bytes;
  const unsigned char *params;
  uint32_t ncalls;
  const struct cvmc_call *calls;
  uint32_t nargs;
  const struct cvmc_arg *args;
  uint32_t nheads;
  const struct cvmc_head *heads;
};

/* One kernel set of the object. */
struct cvmc_tier {
  const char *name;      /* the loop level's tier: "amx", "avx512-vnni", "avx2", "generic" (flags after a comma) */
  const char *cpu;       /* the LLVM CPU its kernels were compiled for */
  const char *features;  /* the features they need ("+name,...", LLVM's names): every one they may use */
  const struct cvmc_model *model;  /* the model, with this tier's kernels */
  const struct cvmc_model *check;  /* the known-answer model, with this tier's kernels */
};

struct cvmc_object {
  uint32_t abi;               /* CVMC_MODEL_ABI */
  const char *key;            /* the store key of the model files this object was built from (64 hex digits) */
  const char *target;         /* what `cvm-aot build --target` named: host, x86-64-v3, x86-64-v4, amx, all */
  uint32_t ntiers;
  const struct cvmc_tier *tiers;  /* best first */
  uint64_t params_bytes;
  uint64_t check_input_size;  /* the known-answer model's input: int32 values */
  const int32_t *check_input;
  uint64_t check_output_size; /* its heads by the reference interpreter, one after another: int32 values */
  const int32_t *check_output;
};

#endif  /* CVMC_MODEL_H_ */
