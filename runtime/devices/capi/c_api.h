/* cvm-runtime's C API (include/cvm/c_api.h of CortexFoundation/cvm-runtime), served by cvmc's ahead-of-time
 * compiled models: the same functions, signatures, statuses and output packing.
 *
 * `cvm-aot lib -o libcvm.so` builds the library; `cvm-aot build model.json params.bin --store DIR` compiles a model
 * into the store, and `CVMAPILoadModel` finds it there by the hash of the two files' bytes (the folder named by
 * $CVMC_AOT_STORE). Statuses: 0 success, 1 logic error (the model's or the caller's fault), 2 runtime error.
 *
 * Threads: calls on distinct nets may run at once; a net runs one inference at a time (a second caller waits).
 */
#ifndef CVM_C_API_H_
#define CVM_C_API_H_

#ifndef CVM_DLL
#define CVM_DLL __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* cvm-runtime defines these as `const int` in its header, which C++ gives internal linkage; `static` does the same
 * in C, so that the header may be included by several C files. */
static const int SUCCEED = 0;
static const int ERROR_LOGIC = 1;
static const int ERROR_RUNTIME = 2;

CVM_DLL int CVMAPILoadModel(const char *graph_json, int graph_strlen,
                            const char *param_bytes, int param_strlen,
                            void **net,  // pass reference of network
                            int device_type, int device_id);
CVM_DLL int CVMAPIFreeModel(void *net);
CVM_DLL int CVMAPIInference(void *net,
                            char *input_data, int input_len,
                            char *output_data);

CVM_DLL int CVMAPIGetVersion(void *net, char *version);
CVM_DLL int CVMAPIGetPreprocessMethod(void *net, char *method);

CVM_DLL int CVMAPIGetInputLength(void *net, unsigned long long *size);
CVM_DLL int CVMAPIGetOutputLength(void *net, unsigned long long *size);
CVM_DLL int CVMAPIGetInputTypeSize(void *net, unsigned long long *size);
CVM_DLL int CVMAPIGetOutputTypeSize(void *net, unsigned long long *size);

CVM_DLL int CVMAPIGetStorageSize(void *net, unsigned long long *gas);
CVM_DLL int CVMAPIGetGasFromModel(void *net, unsigned long long *gas);
CVM_DLL int CVMAPIGetGasFromGraphFile(const char *graph_json, unsigned long long *gas);

/* Not in cvm-runtime's c_api.h (it declares this one in cvm/runtime/c_runtime_api.h): the message of the last
 * failed call on this thread ("" when none failed). */
CVM_DLL const char *CVMGetLastError(void);

#ifdef __cplusplus
} /* end extern "C" */
#endif

#endif  // CVM_C_API_H_
