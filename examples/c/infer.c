/* infer.c: one inference through cvm-runtime's C API (c_api.h), as `cvm-run` prints it: the output values, one a line.
 *   cvm-aot lib -o libcvm.so --header c_api.h && cvm-aot build model.json params.bin --store STORE
 *   cc -o infer infer.c -I. -L. -lcvm -Wl,-rpath,$PWD && CVMC_AOT_STORE=STORE ./infer model.json params.bin input.bin
 * The gas goes to stderr; the exit status is the API's (0, 1 logic error, 2 runtime error). */
#include <stdio.h>
#include <stdlib.h>
#include "c_api.h"

static char *read_file(const char *path, int *size) {
  FILE *f = fopen(path, "rb");
  char *data = NULL;
  if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (*size = (int)ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (data = malloc((size_t)*size + 1)) != NULL && fread(data, 1, (size_t)*size, f) == (size_t)*size) {
    fclose(f);
    return data;
  }
  perror(path);
  exit(2);
}

static int fail(const char *call, int status) {
  fprintf(stderr, "%s: status %d: %s\n", call, status, CVMGetLastError());
  return status;
}

int main(int argc, char **argv) {
  if (argc != 4)
    return fprintf(stderr, "usage: %s model.json params.bin input.bin\n", argv[0]), 64;
  int graph_size, params_size, input_size, status;
  char *graph = read_file(argv[1], &graph_size), *params = read_file(argv[2], &params_size);
  char *input = read_file(argv[3], &input_size);
  void *net = NULL;
  unsigned long long gas, bytes, width;
  if ((status = CVMAPILoadModel(graph, graph_size, params, params_size, &net, 0, 0)) != SUCCEED)
    return fail("CVMAPILoadModel", status);
  if ((status = CVMAPIGetGasFromModel(net, &gas)) != SUCCEED ||
      (status = CVMAPIGetOutputLength(net, &bytes)) != SUCCEED ||
      (status = CVMAPIGetOutputTypeSize(net, &width)) != SUCCEED)
    return fail("CVMAPIGetOutputLength", status);
  char *output = calloc(bytes + 1, 1);
  if ((status = CVMAPIInference(net, input, input_size, output)) != SUCCEED)
    return fail("CVMAPIInference", status);
  for (unsigned long long i = 0; i < bytes / width; i++)  /* int8 or int32 (little-endian) values */
    printf("%d\n", width == 1 ? (int)(signed char)output[i] : ((int *)output)[i]);
  fprintf(stderr, "gas %llu\n", gas);
  CVMAPIFreeModel(net);
  free(output), free(graph), free(params), free(input);
  return 0;
}
