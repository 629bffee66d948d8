/* cvm-runtime's C API over models compiled ahead of time by `cvm-aot build` (see c_api.h).
 *
 * CVMAPILoadModel hashes the two files' bytes, reads the model's entry from the store and checks its tag (store.c),
 * then either returns the decision recorded for a rejected model (its status; the message as the runtime's) or
 * loads the model's shared object and walks its host program (cvmc_model.h): an arena, an input buffer, the
 * kernels' argument pointers, resolved once. CVMAPIInference copies the input in (saturated to its precision),
 * makes the calls (one native program: the JIT's scheduler, runtime/engine/program.ll), copies the heads out and packs them
 * as CVMModel::SaveTensor does (model.cc:150).
 *
 * The statuses are cvm-runtime's, check by check: a NULL argument where the runtime CHECKs is 2, an input of the
 * wrong length is 1 (VERIFY_EQ), heads that cannot be concatenated are 1. Where the runtime would crash (a NULL
 * `net` to load into, a NULL pointer with a length), this library returns 2 instead.
 *
 * Handles: a `net` is a registry handle (a slot and its generation), not a pointer: a freed, stale or forged one is
 * status 2 and nothing is read through it.
 *
 * Tiers: a store may hold a model for several targets (`<key>.<target>.cvmc`), looked up in the order of `targets`
 * below; an object holds one tier or, built with `--target all`, four (cvmc_model.h). The library runs the first
 * tier whose CPU features this machine has (cpu.h: checked before any call, so no SIGILL) and whose known-answer
 * check passes: before a tier is first trusted in a process, its kernels run the object's known-answer model and
 * must give the heads the reference interpreter gave at build time; a tier that fails is disabled for the
 * process, with one warning naming it, and the next tier runs. An object with no tier left for this CPU is
 * passed over for the next target's entry; when none is left, the load is refused (status 2) with each reason.
 * $CVMC_AOT_VERBOSE=1 prints the target and tier each load runs.
 *
 * Threads: nets share nothing (the last error is per thread), so distinct nets may run at once; a net runs one
 * inference at a time under its mutex (its arena is reused between inferences); a net freed while a call runs on
 * it is released when that call returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <unistd.h>

#include "c_api.h"
#include "cpu.h"
#include "cvmc_model.h"
#include "store.h"

#define MAX_THREADS 256
#define ALIGN 64
#define MAX_DIMS 32

/* ---------------------------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------------------------- */

static __thread char last_error[2048];

int cvmc_fail(int status, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  vsnprintf(last_error, sizeof last_error, format, ap);
  va_end(ap);
  fprintf(stderr, "ERROR: %s\n", last_error);
  return status;
}

const char *CVMGetLastError(void) { return last_error; }

/* ---------------------------------------------------------------------------------------------------------------
 * Threads: the JIT's scheduler (runtime/engine/program.ll, compiled into this library by `cvm-aot lib`). A net's calls
 * run as one native program: this thread runs them in order, the split ones shared by chunks with the helper
 * threads of one pool per process (started on first use, kept), one hand-off per inference. One inference has
 * the pool at a time; another that finds it taken runs without helpers (the same bits). See runtime/engine/program.py.
 * ------------------------------------------------------------------------------------------------------------- */

void cvmc_program_begin(int64_t *prog);
void cvmc_program_main(int64_t *prog);
void cvmc_pool_worker(int64_t *pool);
void cvmc_pool_publish(int64_t *pool, int64_t *prog, int64_t tickets);
void cvmc_pool_retire(int64_t *pool);

#define PROGRAM_WORDS 4 /* [calls, stop, active helpers, sleepers], then per call: */
#define CALL_WORDS 7    /* kernel, argument table, trip, split, chunk, next unit, units done */

static struct {
  pthread_mutex_t busy;  /* held by the inference that has the pool */
  pthread_mutex_t grow;
  int64_t words[6];      /* [generation, sleepers, program, tickets, inside, joined] (program.ll) */
  pthread_t helpers[MAX_THREADS];
  int count;
  int cpu;               /* the CPU the helpers are kept off: the publishing thread's at the last publish */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0, -1};

static void *pool_thread(void *arg) {
  (void)arg;
  cvmc_pool_worker(pool.words); /* never returns */
  return NULL;
}

/* A forked child has none of the parent's helpers: it starts a pool of its own. */
static void pool_after_fork(void) {
  memset(pool.words, 0, sizeof pool.words);
  pthread_mutex_init(&pool.busy, NULL);
  pthread_mutex_init(&pool.grow, NULL);
  pool.count = 0;
  pool.cpu = -1;
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static void pool_init(void) { pthread_atfork(NULL, NULL, pool_after_fork); }

/* At least `helpers` helper threads (fewer where the system refuses more: the run goes on with those). */
static void pool_grow(int helpers) {
  pthread_once(&pool_once, pool_init);
  if (pool.count >= helpers)
    return;
  pthread_mutex_lock(&pool.grow);
  while (pool.count < helpers && pool.count < MAX_THREADS) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int ok = pthread_create(&pool.helpers[pool.count], &attr, pool_thread, NULL) == 0;
    pthread_attr_destroy(&attr);
    if (!ok)
      break;
    pool.count++;
    pool.cpu = -1; /* the new one is placed at the next publish */
  }
  pthread_mutex_unlock(&pool.grow);
}

/* Keep the helpers off `cpu`, the publishing thread's: a helper woken by it is otherwise often put on its CPU
 * (the scheduler's wake-affinity), where the two share one core while another idles (program.py `_keep_off`). */
static void pool_keep_off(int cpu) {
  if (cpu < 0 || cpu == pool.cpu)
    return;
  pool.cpu = cpu;
  cpu_set_t allowed, others;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return;
  others = allowed;
  CPU_CLR(cpu, &others);
  for (int i = 0; i < pool.count; ++i)
    pthread_setaffinity_np(pool.helpers[i], sizeof others, CPU_COUNT(&others) ? &others : &allowed);
}

/* The net's native program: its calls' words, as program.py's `Program` writes them. */
static int64_t *program_words(const struct cvmc_model *m, void **args, int threads) {
  int64_t *w = calloc(PROGRAM_WORDS + (size_t)CALL_WORDS * m->ncalls, sizeof *w);
  if (w == NULL)
    return NULL;
  w[0] = m->ncalls;
  w[1] = 1;
  for (uint32_t i = 0; i < m->ncalls; ++i) {
    const struct cvmc_call *c = &m->calls[i];
    int64_t *call = w + PROGRAM_WORDS + (size_t)CALL_WORDS * i;
    int64_t per = 16 * (int64_t)threads, chunk = (c->trip + per - 1) / per;
    call[0] = (int64_t)(intptr_t)c->kernel;
    call[1] = (int64_t)(intptr_t)(args + c->first_arg);
    call[2] = c->trip;
    call[3] = c->split != 0 && c->trip > 1;
    call[4] = chunk < 1 ? 1 : chunk;
  }
  return w;
}

/* The physical cores among the CPUs of `set` (hyper-threads of one core count once): CPUs whose sibling lists in
 * /sys start with the same CPU are one core; a CPU /sys says nothing of is a core of its own. */
static int physical_cores(const cpu_set_t *set) {
  cpu_set_t cores;
  CPU_ZERO(&cores);
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, set))
      continue;
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
    long first = c;
    FILE *f = fopen(path, "r");
    if (f != NULL) {
      if (fscanf(f, "%ld", &first) != 1 || first < 0 || first >= CPU_SETSIZE)
        first = c;
      fclose(f);
    }
    CPU_SET((int)first, &cores);
  }
  return CPU_COUNT(&cores);
}

/* The rule of `cvmc.runtime.engine.threads.default_threads`: $CVMC_THREADS (an integer in [1, 256]), else the physical
 * cores this process may use; either way at most the CPUs it may use (more threads only wait for each other). */
static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int threads_wanted(int *threads) {
  cpu_set_t set;
  int cpus = 1, cores = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    cpus = CPU_COUNT(&set);
    cores = physical_cores(&set);
  }
  int n = cores;
  const char *env = getenv("CVMC_THREADS");
  if (env != NULL && env[0] != 0) {
    char *end;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno != 0 || *end != 0 || v < 1 || v > MAX_THREADS)
      return cvmc_fail(1, "expected $CVMC_THREADS to be an integer in [1, %d], got '%s'", MAX_THREADS, env);
    n = (int)v;
  }
  *threads = n > cpus ? cpus : n < 1 ? 1 : n;
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------------
 * A loaded model
 * ------------------------------------------------------------------------------------------------------------- */

struct net {
  void *object;    /* the model's shared object (dlopen) */
  int object_fd;   /* the memfd it was loaded from (-1: none), open while it is loaded */
  const struct cvmc_model *m;  /* the host program of the tier it runs */
  unsigned char *arena;
  int32_t *input;
  int32_t *heads;         /* every head's values, one head after another */
  uint64_t *head_start;   /* where head k starts in `heads` */
  void **args;            /* every call's argument pointers */
  pthread_mutex_t lock;   /* one inference at a time */
  int has_lock;
  int64_t *program;       /* the calls as one native program (program_words) */
  int threads;            /* the caller and threads - 1 helpers; 1: the caller alone */
};

static void net_free(struct net *n) {
  if (n == NULL)
    return;
  free(n->program);
  if (n->has_lock)
    pthread_mutex_destroy(&n->lock);
  free(n->arena);
  free(n->input);
  free(n->heads);
  free(n->head_start);
  free(n->args);
  if (n->object != NULL)
    dlclose(n->object);
  if (n->object_fd >= 0)
    close(n->object_fd);
  free(n);
}

static void *aligned_zeros(uint64_t bytes) {
  size_t size = (size_t)((bytes + ALIGN - 1) / ALIGN * ALIGN);
  void *p = aligned_alloc(ALIGN, size ? size : ALIGN);
  if (p != NULL)
    memset(p, 0, size ? size : ALIGN);
  return p;
}

static const unsigned char *root_base(const struct net *n, uint32_t root) {
  switch (root) {
    case CVMC_ROOT_ARENA: return n->arena;
    case CVMC_ROOT_INPUT: return (const unsigned char *)n->input;
    default: return n->m->params;
  }
}

/* Check a host program's tables against what the library can run, then allocate the net's memory and resolve
 * every kernel argument to its pointer; `threads`: the most the net's calls may use. */
static int net_setup(struct net *n, const char *key, int threads) {
  const struct cvmc_model *m = n->m;
  for (uint32_t i = 0; i < m->nargs; ++i)
    if (m->args[i].root >= CVMC_ROOTS)
      return cvmc_fail(2, "model %s: argument %u names root %u", key, i, m->args[i].root);
  if (m->nheads == 0)
    return cvmc_fail(2, "model %s has no heads", key);
  for (uint32_t i = 0; i < m->nheads; ++i)
    if (m->heads[i].root >= CVMC_ROOTS || m->heads[i].ndim == 0 || m->heads[i].ndim > MAX_DIMS)
      return cvmc_fail(2, "model %s: head %u is malformed", key, i);
  uint64_t head_values = 0;
  for (uint32_t k = 0; k < m->nheads; ++k)
    head_values += m->heads[k].size;
  n->arena = aligned_zeros(m->arena_bytes);
  n->input = aligned_zeros(4 * m->input_size);
  n->heads = aligned_zeros(4 * head_values);
  n->head_start = calloc(m->nheads + 1, sizeof *n->head_start);
  n->args = calloc(m->nargs + 1, sizeof *n->args);
  if (!n->arena || !n->input || !n->heads || !n->head_start || !n->args)
    return cvmc_fail(2, "out of memory setting up model %s: its plan needs %llu bytes of working memory", key,
                     (unsigned long long)(m->arena_bytes + 4 * m->input_size + 4 * head_values));
  uint64_t at = 0;
  for (uint32_t k = 0; k < m->nheads; ++k) {
    n->head_start[k] = at;
    at += m->heads[k].size;
  }
  for (uint32_t i = 0; i < m->nargs; ++i)
    n->args[i] = (void *)(root_base(n, m->args[i].root) + m->args[i].shift);
  if (pthread_mutex_init(&n->lock, NULL) != 0)
    return cvmc_fail(2, "cannot create the mutex of model %s", key);
  n->has_lock = 1;
  int split = 0;
  for (uint32_t i = 0; i < m->ncalls; ++i)
    split |= m->calls[i].split != 0 && m->calls[i].trip > 1;
  n->threads = split ? threads : 1;
  n->program = program_words(m, n->args, n->threads);
  if (n->program == NULL)
    return cvmc_fail(2, "out of memory setting up model %s", key);
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The registry of live nets. A handle is not a pointer: it is a slot's index and the slot's generation, looked up
 * under the registry's mutex, so a freed, stale or forged handle is status 2 and nothing is read through it. A
 * slot's generation moves when its net is freed, so a slot reused by a later load never answers to an old handle.
 * A call holds its net (`users`) while it runs; a net freed meanwhile is released by the last call that held it.
 * ------------------------------------------------------------------------------------------------------------- */

_Static_assert(sizeof(void *) == 8, "a handle holds a 32-bit slot index and a 32-bit generation");
#define MAX_NETS (1u << 20)

struct slot {
  struct net *net;      /* NULL: free */
  uint32_t generation;  /* of the net in it, or of the next one; UINT32_MAX: retired */
  uint32_t users;       /* calls running on it */
  int freed;            /* CVMAPIFreeModel was called: no new call; the last user frees it */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots;
static uint32_t nslots;

static void *handle_of(uint32_t index, uint32_t generation) {
  return (void *)(uintptr_t)((uint64_t)generation << 32 | (uint64_t)(index + 1));
}

/* The slot of a live handle (under the lock), else NULL. */
static struct slot *slot_of(void *handle) {
  uint64_t h = (uint64_t)(uintptr_t)handle;
  uint64_t index = (h & 0xffffffffu) - 1;
  if (index >= nslots)
    return NULL;
  struct slot *s = &slots[index];
  return s->net != NULL && !s->freed && s->generation == (uint32_t)(h >> 32) ? s : NULL;
}

/* Register a loaded net: 0 and its handle, or 2. */
static int net_register(struct net *n, void **handle) {
  pthread_mutex_lock(&registry_lock);
  uint32_t i = 0;
  while (i < nslots && (slots[i].net != NULL || slots[i].generation == UINT32_MAX))
    ++i;
  if (i == nslots) {
    uint32_t grown = nslots ? 2 * nslots : 16;
    struct slot *more = nslots < MAX_NETS ? realloc(slots, grown * sizeof *slots) : NULL;
    if (more == NULL) {
      pthread_mutex_unlock(&registry_lock);
      return cvmc_fail(2, "cannot load another model: %u models are loaded", nslots);
    }
    memset(more + nslots, 0, (grown - nslots) * sizeof *more);
    /* Generations start at values of this process's own, so that small or reused integers are no live handles. */
    uint64_t seed = now_ns() ^ (uint64_t)(uintptr_t)&more;
    for (uint32_t k = nslots; k < grown; ++k)
      more[k].generation = (uint32_t)(((seed + k) * 0x9E3779B97F4A7C15ull) >> 33);  /* < 2^31: far from retired */
    slots = more;
    nslots = grown;
  }
  slots[i].net = n;
  slots[i].users = 0;
  slots[i].freed = 0;
  *handle = handle_of(i, slots[i].generation);
  pthread_mutex_unlock(&registry_lock);
  return 0;
}

/* The net of a live handle, held until `net_release`; NULL for any other value. */
static struct net *net_acquire(void *handle) {
  pthread_mutex_lock(&registry_lock);
  struct slot *s = slot_of(handle);
  struct net *n = NULL;
  if (s != NULL) {
    s->users++;
    n = s->net;
  }
  pthread_mutex_unlock(&registry_lock);
  return n;
}

/* Empty slot `s` (under the lock): its generation moves on; returns its net, to be freed outside the lock. */
static struct net *slot_empty(struct slot *s) {
  struct net *n = s->net;
  s->net = NULL;
  s->freed = 0;
  s->users = 0;
  if (s->generation < UINT32_MAX)
    s->generation++;  /* at UINT32_MAX the slot is retired: its handles can never come back */
  return n;
}

static void net_release(void *handle) {
  struct net *gone = NULL;
  pthread_mutex_lock(&registry_lock);
  uint64_t index = ((uint64_t)(uintptr_t)handle & 0xffffffffu) - 1;
  struct slot *s = &slots[index];  /* held: its net is still there */
  if (--s->users == 0 && s->freed)
    gone = slot_empty(s);
  pthread_mutex_unlock(&registry_lock);
  net_free(gone);
}

/* CVMAPIFreeModel: 0, or 2 for a handle that is not live. */
static int net_unregister(void *handle) {
  struct net *gone = NULL;
  pthread_mutex_lock(&registry_lock);
  struct slot *s = slot_of(handle);
  if (s != NULL) {
    s->freed = 1;
    if (s->users == 0)
      gone = slot_empty(s);
  }
  pthread_mutex_unlock(&registry_lock);
  if (s == NULL)
    return cvmc_fail(2, "net is not a model loaded by CVMAPILoadModel (or was freed)");
  net_free(gone);
  return SUCCEED;
}

#define NOT_A_NET() cvmc_fail(2, "net is not a model loaded by CVMAPILoadModel (or was freed)")

/* ---------------------------------------------------------------------------------------------------------------
 * An inference
 * ------------------------------------------------------------------------------------------------------------- */

static void read_input(const struct cvmc_model *m, const char *in, int32_t *out) {
  int32_t bound = m->input_bound;
  for (uint64_t i = 0; i < m->input_size; ++i) {
    int32_t v;
    if (m->input_type_size == 1) {
      v = (int8_t)in[i];
    } else {
      memcpy(&v, in + 4 * i, 4);  /* little endian, as the API's bytes are on x86 */
    }
    out[i] = v < -bound ? -bound : v > bound ? bound : v;
  }
}

static void run_calls(struct net *n) {
  cvmc_program_begin(n->program);
  if (n->threads > 1 && pthread_mutex_trylock(&pool.busy) == 0) {
    pool_grow(n->threads - 1);
    pool_keep_off(sched_getcpu());
    cvmc_pool_publish(pool.words, n->program, n->threads - 1);
    cvmc_program_main(n->program);
    cvmc_pool_retire(pool.words);
    pthread_mutex_unlock(&pool.busy);
    return;
  }
  cvmc_program_main(n->program);
}

/* A head's strided view, row-major into `out`. */
static void copy_head(const struct net *n, const struct cvmc_head *h, int32_t *out) {
  const int32_t *base = (const int32_t *)(root_base(n, h->root) + h->shift) + h->offset;
  int64_t index[MAX_DIMS] = {0}, at = 0;
  uint32_t d = h->ndim;
  for (uint64_t i = 0; i < h->size; ++i) {
    out[i] = base[at];
    for (uint32_t k = d; k-- > 0;) {  /* the odometer: the last dimension turns fastest */
      at += h->strides[k];
      if (++index[k] < h->shape[k])
        break;
      at -= h->strides[k] * h->shape[k];
      index[k] = 0;
    }
  }
}

static void put_i32(char *mem, int32_t v) { memcpy(mem, &v, 4); }

/* ---------------------------------------------------------------------------------------------------------------
 * Tiers and the known-answer check
 * ------------------------------------------------------------------------------------------------------------- */

/* The targets a model's entries may be built for, in the order they are looked up (cvmc.runtime.devices.aot.LOOKUP_ORDER):
 * the object built on (or for) this machine, then the one with every tier, then the single tiers, best first. */
static const char *const targets[] = {"host", "all", "amx", "x86-64-v4", "x86-64-v3"};
#define NTARGETS (sizeof targets / sizeof targets[0])
#define NO_TIER (-2) /* an object none of whose tiers runs here: the next target's entry may */
#define MAX_CHECKED 32

/* What this process found of each tier's known-answer check, by tier name: 1 passed, 0 failed (then disabled). */
static struct {
  pthread_mutex_t lock;
  int count;
  char name[MAX_CHECKED][48];
  int passed[MAX_CHECKED];
} checked = {PTHREAD_MUTEX_INITIALIZER, 0, {{0}}, {0}};

/* $CVMC_AOT_VERBOSE=1: each load names the target and tier it runs, each known-answer check its result and time. */
static int verbose(void) {
  const char *v = getenv("CVMC_AOT_VERBOSE");
  return v != NULL && strcmp(v, "1") == 0;
}

/* Run the known-answer model of tier `t` once: 1 when its heads are the recorded ones, 0 when not, or a status
 * (2, after cvmc_fail) when it cannot be set up. */
static int run_check(const struct cvmc_object *o, const struct cvmc_tier *t, const char *key) {
  struct net *n = calloc(1, sizeof *n);
  if (n == NULL)
    return cvmc_fail(2, "out of memory checking model %s", key);
  n->object_fd = -1;
  n->m = t->check;
  int status = net_setup(n, key, 1);
  int same = 0;
  if (status == 0) {
    const struct cvmc_model *m = n->m;
    uint64_t values = 0;
    for (uint32_t k = 0; k < m->nheads; ++k)
      values += m->heads[k].size;
    if (m->input_size == o->check_input_size && values == o->check_output_size) {
      memcpy(n->input, o->check_input, 4 * m->input_size);
      run_calls(n);
      for (uint32_t k = 0; k < m->nheads; ++k)
        copy_head(n, &m->heads[k], n->heads + n->head_start[k]);
      same = memcmp(n->heads, o->check_output, 4 * values) == 0;
    }
  }
  net_free(n);
  return status != 0 ? -status : same;
}

/* Whether tier `t` passes the known-answer check in this process (run the first time a tier of that name is
 * met; a failure warns once and disables the tier): 1 or 0, or a negative status. */
static int tier_trusted(const struct cvmc_object *o, const struct cvmc_tier *t, const char *key) {
  pthread_mutex_lock(&checked.lock);
  int i = 0;
  while (i < checked.count && strcmp(checked.name[i], t->name) != 0)
    ++i;
  int result;
  if (i < checked.count) {
    result = checked.passed[i];
  } else {
    uint64_t start = now_ns();
    result = run_check(o, t, key);
    if (verbose())
      fprintf(stderr, "cvmc: the known-answer check of tier %s (cpu %s): %s in %.3f ms\n", t->name, t->cpu,
              result == 1 ? "passed" : "failed", (double)(now_ns() - start) / 1e6);
    if (result >= 0 && checked.count < MAX_CHECKED) {
      snprintf(checked.name[checked.count], sizeof checked.name[0], "%s", t->name);
      checked.passed[checked.count++] = result;
    }
    if (result == 0)
      fprintf(stderr, "WARNING: cvmc: the %s kernels (model %s, cpu %s) gave other bytes than the reference on "
              "the known-answer model on this CPU: %s is disabled for this process, models run on the next tier\n",
              t->name, key, t->cpu, t->name);
  }
  pthread_mutex_unlock(&checked.lock);
  return result;
}

static void append(char *out, size_t n, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void append(char *out, size_t n, const char *format, ...) {
  size_t at = strlen(out);
  if (at + 1 >= n)
    return;
  va_list ap;
  va_start(ap, format);
  vsnprintf(out + at, n - at, format, ap);
  va_end(ap);
}

/* The tier of object `o` this process runs: 0 and *out; NO_TIER with the reasons in `why`; or a status. */
static int pick_tier(const struct cvmc_object *o, const char *key, const struct cvmc_tier **out, char *why,
                     size_t n) {
  for (uint32_t i = 0; i < o->ntiers; ++i) {
    const struct cvmc_tier *t = &o->tiers[i];
    char missing[512];
    cvmc_missing_features(t->features, missing, sizeof missing);
    if (missing[0]) {
      append(why, n, "%s tier %s (compiled for the CPU %s) needs features this CPU lacks (or this library cannot "
             "check): %s; ", o->target, t->name, t->cpu, missing);
      continue;
    }
    int trusted = tier_trusted(o, t, key);
    if (trusted < 0)
      return -trusted;
    if (!trusted) {
      append(why, n, "%s tier %s failed the known-answer check on this CPU; ", o->target, t->name);
      continue;
    }
    *out = t;
    return 0;
  }
  return NO_TIER;
}

/* Load the object of a model's entry into `n`: 0; NO_TIER (reasons appended to `why`); or a status. */
static int load_object(struct net *n, const struct cvmc_entry *entry, const char *key, char *why, size_t nwhy) {
  int status = cvmc_open_object(entry->payload, entry->payload_size, key, &n->object, &n->object_fd);
  if (status != 0)
    return status;
  const struct cvmc_object *o = dlsym(n->object, CVMC_OBJECT_SYMBOL);
  if (o == NULL)
    return cvmc_fail(2, "the object of model %s has no %s (built by another version of cvm-aot): rebuild it with "
                     "cvm-aot build", key, CVMC_OBJECT_SYMBOL);
  if (o->abi != CVMC_MODEL_ABI)
    return cvmc_fail(2, "model %s was built for another version of this library (model ABI %u, expected %d): "
                     "rebuild it with cvm-aot build", key, o->abi, CVMC_MODEL_ABI);
  if (o->key == NULL || strcmp(o->key, key) != 0)
    return cvmc_fail(2, "the object in the store entry %s was built for another model (%.64s): refused", key,
                     o->key ? o->key : "none");
  if (o->ntiers == 0 || o->tiers == NULL)
    return cvmc_fail(2, "the object of model %s has no tiers", key);
  const struct cvmc_tier *tier = NULL;
  status = pick_tier(o, key, &tier, why, nwhy);
  if (status != 0)
    return status;
  if (verbose())
    fprintf(stderr, "cvmc: model %s: target %s, tier %s (cpu %s)\n", key, o->target, tier->name, tier->cpu);
  n->m = tier->model;
  int threads = 1;
  status = threads_wanted(&threads);
  return status != 0 ? status : net_setup(n, key, threads);
}

/* CVMModel::SaveTensor (model.cc:150), on the heads as int32 values. */
static int save_tensor(const struct net *n, char *mem) {
  const struct cvmc_model *m = n->m;
  uint32_t heads = m->nheads;
  if (m->post == CVMC_POST_ARGMAX) {
    /* Per head, the index of the first largest int8-truncated value of rows i = 0, L, 2L, ... below the row count
     * (the runtime steps its row index by the row length L), written one after another. */
    char *cp = mem;
    for (uint32_t k = 0; k < heads; ++k) {
      const struct cvmc_head *h = &m->heads[k];
      const int32_t *data = n->heads + n->head_start[k];
      uint32_t last_dim = (uint32_t)h->shape[h->ndim - 1];
      uint32_t out_size = (uint32_t)h->size;
      uint32_t out_size_ap = last_dim ? out_size / last_dim : 0;
      for (size_t i = 0; i < out_size_ap; i += last_dim) {
        uint32_t max_id = 0;
        for (size_t j = i; j < i + last_dim; j++)
          if ((int8_t)data[j] > (int8_t)data[i + max_id])
            max_id = (uint32_t)(j - i);
        put_i32(cp, (int32_t)max_id);
        cp += 4;
      }
    }
    return 0;
  }
  if (m->post == CVMC_POST_DETECTION || heads > 1) {
    /* The heads interleaved row by row (a row: the last dimension), when they have as many rows. */
    uint64_t xs0 = 0;
    int can_concat = heads > 1;
    for (uint32_t k = 0; k < heads && can_concat; ++k) {
      const struct cvmc_head *h = &m->heads[k];
      uint64_t ys = (uint64_t)h->shape[h->ndim - 1];
      uint64_t xs = ys ? h->size / ys : 0;
      if (k == 0)
        xs0 = xs;
      else if (xs != xs0)
        can_concat = 0;
    }
    if (!can_concat)
      return cvmc_fail(1, "Check failed: false detection model output cannot concat");
    char *cp = mem;
    int32_t nx = (int32_t)xs0;  /* the runtime truncates the row count to int32 when it writes int32 */
    uint64_t rows = m->output_type_size == 4 ? (uint64_t)(nx < 0 ? 0 : nx) : xs0;
    for (uint64_t x = 0; x < rows; ++x) {
      for (uint32_t k = 0; k < heads; ++k) {
        const struct cvmc_head *h = &m->heads[k];
        uint64_t ys = (uint64_t)h->shape[h->ndim - 1];
        const int32_t *data = n->heads + n->head_start[k] + x * ys;
        for (uint64_t i = 0; i < ys; ++i) {
          if (m->output_type_size == 4) {
            put_i32(cp, data[i]);
            cp += 4;
          } else {
            *cp++ = (char)(int8_t)data[i];
          }
        }
      }
    }
    return 0;
  }
  /* One head: its values as int32, or truncated to int8. */
  const int32_t *data = n->heads;
  if (m->output_type_size == 4) {
    memcpy(mem, data, 4 * m->heads[0].size);
  } else {
    for (uint64_t i = 0; i < m->heads[0].size; ++i)
      mem[i] = (char)(int8_t)data[i];
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------------
 * The API
 * ------------------------------------------------------------------------------------------------------------- */

#define BUILD_HINT "cvm-aot build model.json params.bin"

int CVMAPILoadModel(const char *graph_json, int graph_strlen, const char *param_bytes, int param_strlen, void **net,
                    int device_type, int device_id) {
  (void)device_id;
  /* c_api.cc:26: std::string(graph_json, graph_strlen) throws std::length_error (a logic error) on a negative
   * length. */
  if (graph_strlen < 0 || param_strlen < 0)
    return cvmc_fail(1, "basic_string::_M_create: a length of %d bytes (std::length_error)",
                     graph_strlen < 0 ? graph_strlen : param_strlen);
  if ((graph_json == NULL && graph_strlen > 0) || (param_bytes == NULL && param_strlen > 0))
    return cvmc_fail(2, "Check failed: %s != nullptr (with a length of %d bytes)",
                     graph_json == NULL ? "graph_json" : "param_bytes", graph_json == NULL ? graph_strlen :
                     param_strlen);
  /* c_api.cc:30; then the model's context: cvm-runtime built for the CPU (as the oracle is: CPU and FORMAL, no
   * CUDA) has no GPU device API, a runtime error. CPU and FORMAL run the same code here: cvmc's bits are FORMAL's. */
  if (device_type < 0 || device_type > 2)
    return cvmc_fail(2, "Check failed: APIDevTypeMap.find(device_type) != APIDevTypeMap.end() Invalid device "
                     "type: %d, only supported 0(CPU), 1(GPU), 2(FORMAL)", device_type);
  if (device_type == 1)
    return cvmc_fail(2, "Check failed: allow_missing Device API gpu is not enabled (cvmc's library runs models on "
                     "the CPU: device_type 0 or 2)");
  if (net == NULL)
    return cvmc_fail(2, "Check failed: net != nullptr");
  char key[CVMC_KEY_CHARS + 1];
  cvmc_model_key(graph_json ? graph_json : "", (size_t)graph_strlen, param_bytes ? param_bytes : "",
                 (size_t)param_strlen, key);
  char why[1536] = "";
  for (size_t k = 0; k < NTARGETS; ++k) {
    struct cvmc_entry entry;
    int status = cvmc_store_read(key, targets[k], "SD", BUILD_HINT, &entry);
    if (status == CVMC_ENTRY_MISSING)
      continue;
    if (status != 0)
      return status;
    if (entry.kind == 'D') {  /* the runtime rejects this model: its status and message */
      int decided = entry.payload_size >= 1 && entry.payload[0] == '1' ? 1 : 2;
      status = cvmc_fail(decided, "%.*s", (int)(entry.payload_size > 1 ? entry.payload_size - 1 : 0),
                         (const char *)entry.payload + 1);
      cvmc_entry_free(&entry);
      return status;
    }
    char mask[64];
    if (cvmc_cpu_mask_check(mask, sizeof mask) != 0) {
      cvmc_entry_free(&entry);
      return cvmc_fail(2, "expected $CVMC_CPU_MASK to name CPU features this library checks (LLVM's names, "
                       "comma-separated), got '%s' in '%s'", mask, getenv("CVMC_CPU_MASK"));
    }
    struct net *n = calloc(1, sizeof *n);
    if (n == NULL) {
      cvmc_entry_free(&entry);
      return cvmc_fail(2, "out of memory loading model %s", key);
    }
    n->threads = 1;
    n->object_fd = -1;
    status = load_object(n, &entry, key, why, sizeof why);
    cvmc_entry_free(&entry);
    if (status == 0)
      status = net_register(n, net);
    if (status != 0)
      net_free(n);
    if (status != NO_TIER)
      return status;
  }
  if (why[0] == 0)
    return cvmc_store_missing("model", key, BUILD_HINT);
  size_t end = strlen(why);
  if (end >= 2 && strcmp(why + end - 2, "; ") == 0)
    why[end - 2] = 0;
  return cvmc_fail(2, "model %s: no object of it in the store runs on this CPU: %s: refused before any call; "
                   "rebuild it here with cvm-aot build (or build it with --target all)", key, why);
}

int CVMAPIFreeModel(void *net) {
  if (net == NULL)
    return SUCCEED;
  return net_unregister(net);
}

int CVMAPIInference(void *net, char *input_data, int input_len, char *output_data) {
  if (net == NULL || input_data == NULL || output_data == NULL)  /* c_api.cc:56, CHECK_3_NOT_NULL */
    return cvmc_fail(2, "Check failed: %s != nullptr", net == NULL ? "net" : input_data == NULL ? "input_data" :
                     "output_data");
  struct net *n = net_acquire(net);
  if (n == NULL)
    return NOT_A_NET();
  const struct cvmc_model *m = n->m;
  int status;
  if ((long long)input_len != (long long)m->input_length) { /* model.cc:197, VERIFY_EQ in PlanInput */
    status = cvmc_fail(1, "expected %llu input bytes (%llu x int%u), got %d", (unsigned long long)m->input_length,
                       (unsigned long long)m->input_size, 8 * m->input_type_size, input_len);
  } else {
    pthread_mutex_lock(&n->lock);
    read_input(m, input_data, n->input);
    run_calls(n);
    for (uint32_t k = 0; k < m->nheads; ++k)
      copy_head(n, &m->heads[k], n->heads + n->head_start[k]);
    status = save_tensor(n, output_data);
    pthread_mutex_unlock(&n->lock);
  }
  net_release(net);
  return status;
}

#define GETTER(name, what)                                         \
  int name(void *net, unsigned long long *out) {                   \
    if (net == NULL || out == NULL)                                \
      return cvmc_fail(2, "Check failed: %s != nullptr",           \
                       net == NULL ? "net" : "the output pointer"); \
    struct net *n = net_acquire(net);                              \
    if (n == NULL)                                                 \
      return NOT_A_NET();                                          \
    *out = (unsigned long long)(n->m->what);                       \
    net_release(net);                                              \
    return SUCCEED;                                                \
  }

GETTER(CVMAPIGetInputLength, input_length)
GETTER(CVMAPIGetOutputLength, output_length)
GETTER(CVMAPIGetInputTypeSize, input_type_size)
GETTER(CVMAPIGetOutputTypeSize, output_type_size)
GETTER(CVMAPIGetStorageSize, storage_size)
GETTER(CVMAPIGetGasFromModel, gas)

static int copy_text(void *net, char *out, int version) {
  if (net == NULL || out == NULL)
    return cvmc_fail(2, "Check failed: %s != nullptr", net == NULL ? "net" : version ? "version" : "method");
  struct net *n = net_acquire(net);
  if (n == NULL)
    return NOT_A_NET();
  strcpy(out, version ? n->m->version : n->m->postprocess);
  net_release(net);
  return SUCCEED;
}

int CVMAPIGetVersion(void *net, char *version) { return copy_text(net, version, 1); }

int CVMAPIGetPreprocessMethod(void *net, char *method) { return copy_text(net, method, 0); }

int CVMAPIGetGasFromGraphFile(const char *graph_json, unsigned long long *gas) {
  /* c_api.cc:147: std::string(graph_json) throws std::logic_error on NULL. */
  if (graph_json == NULL)
    return cvmc_fail(1, "basic_string: construction from null is not valid");
  if (gas == NULL)
    return cvmc_fail(2, "Check failed: gas != nullptr");
  char key[CVMC_KEY_CHARS + 1];
  cvmc_graph_key(graph_json, strlen(graph_json), key);
  struct cvmc_entry entry;
  int status = cvmc_store_read(key, NULL, "GD", BUILD_HINT, &entry);
  if (status == CVMC_ENTRY_MISSING)
    return cvmc_store_missing("graph", key, BUILD_HINT);
  if (status != 0)
    return status;
  if (entry.kind == 'D') {
    int decided = entry.payload_size >= 1 && entry.payload[0] == '1' ? 1 : 2;
    status = cvmc_fail(decided, "%.*s", (int)(entry.payload_size > 1 ? entry.payload_size - 1 : 0),
                       (const char *)entry.payload + 1);
  } else if (entry.payload_size != 8) {
    status = cvmc_fail(2, "the store entry of graph %s holds %zu bytes of gas, expected 8", key,
                       entry.payload_size);
  } else {
    unsigned long long v = 0;
    for (int i = 7; i >= 0; --i)
      v = v << 8 | entry.payload[i];
    *gas = v;
  }
  cvmc_entry_free(&entry);
  return status;
}
