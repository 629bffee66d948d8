/* A client of cvm-runtime's C API that includes c_api.h and nothing else of cvmc: what a node does.
 *
 *   cvm_client --cases OUTDIR CASE...           load and infer each corpus case folder (model.json, params.bin,
 *                                               input.bin): one line of facts per case on stdout, the output
 *                                               bytes in OUTDIR/<case>.bin
 *   cvm_client --time N model.json params.bin input.bin
 *                                               median per-inference time, as the oracle's time_model prints it
 *   cvm_client --threads T CASE                 T threads at once, each on a net of its own, then T threads on
 *                                               one shared net: every output must equal a lone inference's
 *   cvm_client --load model.json params.bin     the load status alone, with CVMGetLastError on stdout
 *   cvm_client --edges CASE                     the API's statuses on bad arguments, one `what=status` a line
 *   cvm_client --stale CASE OTHER               freed, stale and forged handles (CASE freed, its slot reused by
 *                                               OTHER), and a net freed while other threads run it: `what=status`
 *
 * Built by the tests with gcc against the library `cvm-aot lib` writes; the store is $CVMC_AOT_STORE. Built with
 * -DNO_LAST_ERROR, it links with cvm-runtime's own libcvm.so as well, for comparison.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c_api.h"

/* The facts go here: cvm-runtime's own library prints on stdout (GetOps, its errors), which is pointed at stderr. */
static FILE *facts;
/* The device type passed to CVMAPILoadModel: $CVM_DEVICE (0 cpu by default, 2 formal), as the oracle's run_model. */
static int device;

struct file {
  char *data;
  long size;
};

static struct file slurp(const char *dir, const char *name) {
  char path[4096];
  struct file f = {NULL, 0};
  if (name != NULL)
    snprintf(path, sizeof path, "%s/%s", dir, name);
  else
    snprintf(path, sizeof path, "%s", dir);
  FILE *in = fopen(path, "rb");
  if (in == NULL)
    return f;
  fseek(in, 0, SEEK_END);
  f.size = ftell(in);
  fseek(in, 0, SEEK_SET);
  f.data = malloc((size_t)f.size + 1);
  if (fread(f.data, 1, (size_t)f.size, in) != (size_t)f.size) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(3);
  }
  f.data[f.size] = 0;  /* the JSON as a C string too */
  fclose(in);
  return f;
}

static const char *base_name(const char *path) {
  size_t n = strlen(path);
  while (n > 0 && path[n - 1] == '/')
    --n;
  size_t start = n;
  while (start > 0 && path[start - 1] != '/')
    --start;
  static char out[1024];
  snprintf(out, sizeof out, "%.*s", (int)(n - start), path + start);
  return out;
}

/* Every API function on one case. */
static void run_case(const char *dir, const char *outdir) {
  struct file json = slurp(dir, "model.json"), params = slurp(dir, "params.bin"), input = slurp(dir, "input.bin");
  const char *name = base_name(dir);
  unsigned long long graph_gas = 0;
  int graph_status = CVMAPIGetGasFromGraphFile(json.data, &graph_gas);
  void *net = NULL;
  int status = CVMAPILoadModel(json.data, (int)json.size, params.data, (int)params.size, &net, device, 0);
  fprintf(facts, "case=%s graph_status=%d graph_gas=%llu load=%d", name, graph_status, graph_gas, status);
  if (status == 0) {
    unsigned long long gas = 0, in_len = 0, out_len = 0, in_type = 0, out_type = 0, storage = 0;
    char version[64] = {0}, post[64] = {0};
    int s = CVMAPIGetGasFromModel(net, &gas) | CVMAPIGetInputLength(net, &in_len) |
            CVMAPIGetOutputLength(net, &out_len) | CVMAPIGetInputTypeSize(net, &in_type) |
            CVMAPIGetOutputTypeSize(net, &out_type) | CVMAPIGetStorageSize(net, &storage) |
            CVMAPIGetVersion(net, version) | CVMAPIGetPreprocessMethod(net, post);
    char *out = calloc(out_len + 1, 1);
    int infer = CVMAPIInference(net, input.data, (int)input.size, out);
    fprintf(facts, " getters=%d gas=%llu in_len=%llu in_type=%llu out_len=%llu out_type=%llu storage=%llu version=%s "
           "post=%s infer=%d", s, gas, in_len, in_type, out_len, out_type, storage, version, post[0] ? post : "-",
           infer);
    if (infer == 0) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s.bin", outdir, name);
      FILE *o = fopen(path, "wb");
      if (o == NULL || fwrite(out, 1, out_len, o) != out_len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(3);
      }
      fclose(o);
    }
    free(out);
    if (CVMAPIFreeModel(net) != 0)
      fprintf(facts, " free=failed");
  }
  fprintf(facts, "\n");
  fflush(facts);
  free(json.data);
  free(params.data);
  free(input.data);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int time_model(int runs, const char *json_path, const char *params_path, const char *input_path) {
  struct file json = slurp(json_path, NULL), params = slurp(params_path, NULL), input = slurp(input_path, NULL);
  if (json.data == NULL || params.data == NULL || input.data == NULL) {
    fprintf(stderr, "cannot read the model files\n");
    return 3;
  }
  void *net = NULL;
  double t0 = now_ms();
  int status = CVMAPILoadModel(json.data, (int)json.size, params.data, (int)params.size, &net, device, 0);
  double load_ms = now_ms() - t0;
  if (status != 0)
    return 10 + status;
  unsigned long long out_len = 0;
  CVMAPIGetOutputLength(net, &out_len);
  char *out = calloc(out_len + 1, 1);
  double *ms = calloc((size_t)runs, sizeof *ms);
  for (int i = -1; i < runs; ++i) {  /* one warm-up */
    double a = now_ms();
    status = CVMAPIInference(net, input.data, (int)input.size, out);
    if (status != 0)
      return 20 + status;
    if (i >= 0)
      ms[i] = now_ms() - a;
  }
  CVMAPIFreeModel(net);
  qsort(ms, (size_t)runs, sizeof *ms, by_value);
  double median = runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
  fprintf(facts, "{\"device\":\"cvmc-aot\",\"runs\":%d,\"median_ms\":%.4f,\"load_ms\":%.3f}\n", runs, median, load_ms);
  return 0;
}

/* Threads on distinct nets, then on one shared net: the outputs must equal a lone inference's. */
struct job {
  struct file *json, *params, *input;
  void *shared;
  const char *want;
  unsigned long long out_len;
  int rounds, failed;
};

static void *infer_many(void *arg) {
  struct job *j = arg;
  void *net = j->shared;
  if (net == NULL && CVMAPILoadModel(j->json->data, (int)j->json->size, j->params->data, (int)j->params->size,
                                     &net, device, 0) != 0) {
    j->failed = 1;
    return NULL;
  }
  char *out = calloc(j->out_len + 1, 1);
  for (int r = 0; r < j->rounds; ++r) {
    if (CVMAPIInference(net, j->input->data, (int)j->input->size, out) != 0 || memcmp(out, j->want, j->out_len))
      j->failed = 1;
  }
  free(out);
  if (j->shared == NULL)
    CVMAPIFreeModel(net);
  return NULL;
}

static int threads_test(int threads, const char *dir) {
  struct file json = slurp(dir, "model.json"), params = slurp(dir, "params.bin"), input = slurp(dir, "input.bin");
  void *net = NULL;
  if (CVMAPILoadModel(json.data, (int)json.size, params.data, (int)params.size, &net, device, 0) != 0)
    return 10;
  unsigned long long out_len = 0;
  CVMAPIGetOutputLength(net, &out_len);
  char *want = calloc(out_len + 1, 1);
  if (CVMAPIInference(net, input.data, (int)input.size, want) != 0)
    return 11;
  int failed = 0;
  for (int shared = 0; shared < 2; ++shared) {
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    struct job *jobs = calloc((size_t)threads, sizeof *jobs);
    for (int i = 0; i < threads; ++i) {
      jobs[i] = (struct job){&json, &params, &input, shared ? net : NULL, want, out_len, 20, 0};
      pthread_create(&t[i], NULL, infer_many, &jobs[i]);
    }
    for (int i = 0; i < threads; ++i) {
      pthread_join(t[i], NULL);
      failed |= jobs[i].failed;
    }
    fprintf(facts, "%s: %s\n", shared ? "one shared net" : "distinct nets", failed ? "DIFFERENT" : "equal");
    free(t);
    free(jobs);
  }
  CVMAPIFreeModel(net);
  free(want);
  free(json.data);
  free(params.data);
  free(input.data);
  return failed;
}

/* The statuses of calls with bad arguments (and their bounds) on a valid case. */
static int edges(const char *dir) {
  struct file json = slurp(dir, "model.json"), params = slurp(dir, "params.bin"), input = slurp(dir, "input.bin");
  int jn = (int)json.size, pn = (int)params.size, in = (int)input.size;
  void *net = NULL;
  unsigned long long v = 0;
  char text[64];
#define SHOW(what, call) (fprintf(facts, "%s=%d\n", what, call), fflush(facts))
  SHOW("load_null_net", CVMAPILoadModel(json.data, jn, params.data, pn, NULL, 0, 0));
  SHOW("load_negative_graph_len", CVMAPILoadModel(json.data, -1, params.data, pn, &net, 0, 0));
  SHOW("load_negative_params_len", CVMAPILoadModel(json.data, jn, params.data, -1, &net, 0, 0));
  SHOW("load_device_-1", CVMAPILoadModel(json.data, jn, params.data, pn, &net, -1, 0));
  SHOW("load_device_3", CVMAPILoadModel(json.data, jn, params.data, pn, &net, 3, 0));
  SHOW("load_not_in_store", CVMAPILoadModel(json.data, jn - 1, params.data, pn, &net, 0, 0));
  for (int d = 0; d <= 2; ++d) {
    char what[32];
    int status;
    snprintf(what, sizeof what, "load_device_%d", d);
    net = NULL;
    SHOW(what, status = CVMAPILoadModel(json.data, jn, params.data, pn, &net, d, 7));
    if (status == 0)
      CVMAPIFreeModel(net);
  }
  if (CVMAPILoadModel(json.data, jn, params.data, pn, &net, 0, 0) != 0)
    return 10;
  unsigned long long out_len = 0;
  CVMAPIGetOutputLength(net, &out_len);
  char *out = calloc(out_len + 1, 1), *big = calloc((size_t)in + 2, 1);
  memcpy(big, input.data, (size_t)in);
  SHOW("infer_null_net", CVMAPIInference(NULL, input.data, in, out));
  SHOW("infer_null_input", CVMAPIInference(net, NULL, in, out));
  SHOW("infer_null_output", CVMAPIInference(net, input.data, in, NULL));
  SHOW("infer_input_len_minus_1", CVMAPIInference(net, input.data, in - 1, out));
  SHOW("infer_input_len_plus_1", CVMAPIInference(net, big, in + 1, out));
  SHOW("infer_input_len", CVMAPIInference(net, input.data, in, out));
  SHOW("gas_null_out", CVMAPIGetGasFromModel(net, NULL));
  SHOW("gas_null_net", CVMAPIGetGasFromModel(NULL, &v));
  SHOW("input_length_null_out", CVMAPIGetInputLength(net, NULL));
  SHOW("version_null_out", CVMAPIGetVersion(net, NULL));
  SHOW("method_null_net", CVMAPIGetPreprocessMethod(NULL, text));
  SHOW("graph_gas_null_json", CVMAPIGetGasFromGraphFile(NULL, &v));
  SHOW("graph_gas_null_out", CVMAPIGetGasFromGraphFile(json.data, NULL));
  SHOW("free_null", CVMAPIFreeModel(NULL));
  SHOW("free", CVMAPIFreeModel(net));
#undef SHOW
  free(out);
  free(big);
  free(json.data);
  free(params.data);
  free(input.data);
  return 0;
}

struct runner {
  void *net;
  struct file *input;
  unsigned long long out_len;
  int ok, refused, other;
};

static void *infer_until_freed(void *arg) {
  struct runner *r = arg;
  char *out = calloc(r->out_len + 1, 1);
  for (int i = 0; i < 200; ++i) {
    int status = CVMAPIInference(r->net, r->input->data, (int)r->input->size, out);
    if (status == 0)
      r->ok++;
    else if (status == 2)
      r->refused++;
    else
      r->other++;
  }
  free(out);
  return NULL;
}

/* Handles that are not live: freed (their slot taken by a later model), stale, forged; and a net freed while
 * threads run inferences on it (each call is 0 or 2, and nothing is read after the last one ends). */
static int stale(const char *dir, const char *other) {
  struct file json = slurp(dir, "model.json"), params = slurp(dir, "params.bin"), input = slurp(dir, "input.bin");
  struct file ojson = slurp(other, "model.json"), oparams = slurp(other, "params.bin");
  struct file oinput = slurp(other, "input.bin");
  void *freed = NULL, *net = NULL;
  unsigned long long v = 7;
  char text[64];
  if (CVMAPILoadModel(json.data, (int)json.size, params.data, (int)params.size, &freed, device, 0) != 0)
    return 10;
  CVMAPIFreeModel(freed);
  for (int i = 0; i < 9; ++i) {
    if (CVMAPILoadModel(ojson.data, (int)ojson.size, oparams.data, (int)oparams.size, &net, device, 0) != 0)
      return 11;
    if (i < 8)
      CVMAPIFreeModel(net);
  }
  unsigned long long out_len = 0;
  CVMAPIGetOutputLength(net, &out_len);
  char *out = calloc(out_len + 64, 1);
  int forged_on_stack = 0;
#define SHOW(what, call) (fprintf(facts, "%s=%d\n", what, call), fflush(facts))
  SHOW("freed_infer", CVMAPIInference(freed, input.data, (int)input.size, out));
  SHOW("freed_output_length", CVMAPIGetOutputLength(freed, &v));
  SHOW("freed_version", CVMAPIGetVersion(freed, text));
  SHOW("freed_free", CVMAPIFreeModel(freed));
  SHOW("forged_small", CVMAPIGetGasFromModel((void *)(uintptr_t)3, &v));
  SHOW("forged_pointer", CVMAPIGetGasFromModel(&forged_on_stack, &v));
  SHOW("forged_max", CVMAPIFreeModel((void *)~(uintptr_t)0));
  SHOW("live_infer", CVMAPIInference(net, oinput.data, (int)oinput.size, out));
  struct runner r[3];
  pthread_t t[3];
  for (int i = 0; i < 3; ++i) {
    r[i] = (struct runner){net, &oinput, out_len, 0, 0, 0};
    pthread_create(&t[i], NULL, infer_until_freed, &r[i]);
  }
  int freed_status = CVMAPIFreeModel(net);
  int other_statuses = 0;
  for (int i = 0; i < 3; ++i) {
    pthread_join(t[i], NULL);
    other_statuses += r[i].other;
  }
  SHOW("free_while_running", freed_status);
  SHOW("statuses_other_than_0_or_2", other_statuses);
  SHOW("freed_again", CVMAPIFreeModel(net));
#undef SHOW
  free(out);
  free(json.data);
  free(params.data);
  free(input.data);
  free(ojson.data);
  free(oparams.data);
  free(oinput.data);
  return 0;
}

int main(int argc, char **argv) {
  fflush(stdout);
  facts = fdopen(dup(1), "w");
  dup2(2, 1);
  if (getenv("CVM_DEVICE") != NULL)
    device = atoi(getenv("CVM_DEVICE"));
  if (argc >= 3 && strcmp(argv[1], "--cases") == 0) {
    for (int i = 3; i < argc; ++i)
      run_case(argv[i], argv[2]);
    return 0;
  }
  if (argc == 6 && strcmp(argv[1], "--time") == 0)
    return time_model(atoi(argv[2]), argv[3], argv[4], argv[5]);
  if (argc == 3 && strcmp(argv[1], "--edges") == 0)
    return edges(argv[2]);
  if (argc == 4 && strcmp(argv[1], "--threads") == 0)
    return threads_test(atoi(argv[2]), argv[3]);
  if (argc == 4 && strcmp(argv[1], "--stale") == 0)
    return stale(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "--load") == 0) {
    struct file json = slurp(argv[2], NULL), params = slurp(argv[3], NULL);
    void *net = NULL;
    int status = CVMAPILoadModel(json.data ? json.data : "", (int)json.size, params.data ? params.data : "",
                                 (int)params.size, &net, device, 0);
#ifdef NO_LAST_ERROR  /* cvm-runtime's libcvm.so exports CVMGetLastError as a C++ symbol only */
    fprintf(facts, "load=%d\n", status);
#else
    fprintf(facts, "load=%d error=%s\n", status, status ? CVMGetLastError() : "");
#endif
    if (status == 0)
      CVMAPIFreeModel(net);
    free(json.data);
    free(params.data);
    return 0;
  }
  fprintf(stderr, "usage: cvm_client --cases OUTDIR CASE... | --time N model.json params.bin input.bin | "
                  "--threads T CASE | --load model.json params.bin | --edges CASE | --stale CASE OTHER\n");
  return 64;
}
