/* The store `cvm-aot build` writes and `CVMAPILoadModel` reads (the writer is cvmc.runtime.devices.aot).
 *
 * A store is a folder (named by $CVMC_AOT_STORE) of entries: `<key>.<target>.cvmc` per model and target it was
 * built for (`cvm-aot build --target`: host, all, amx, x86-64-v4, x86-64-v3; the library looks them up in that
 * order and runs the first that runs on this CPU), and `<key>.cvmc` per graph:
 *
 *     key   = hex(SHA-256(domain || u64le(len(json)) || json || u64le(len(params)) || params))
 *             domain "cvmc-aot-model-1\0" for a model; for a graph alone (CVMAPIGetGasFromGraphFile) the domain
 *             "cvmc-aot-graph-1\0" and the JSON up to its first NUL, without the params part
 *     entry = "cvmc-store-1\n" || u64le(n) || head || tag || payload      (n = len(payload) > 0)
 *     head  = HMAC-SHA256(secret, "cvmc-store-1\n" || "head\0" || name || "\0" || u64le(n))
 *     tag   = HMAC-SHA256(secret, "cvmc-store-1\n" || "body\0" || name || "\0" || u64le(n) || payload)
 *     name  = the entry's file name, "<key>.<target>.cvmc" or "<key>.cvmc"
 *     payload: 'S' and the model's shared object | 'D', '1' or '2' and the runtime's message (a rejected model or
 *              graph) | 'G' and the graph's gas as u64le
 *
 * This is the one format of cvmc's stores (cvmc.runtime.engine.store): the JIT's cache seals its entries the same way.
 * The head is checked before the payload is read, so a planted file claiming gigabytes costs a read of its head.
 * The secret is the user's key of cvmc's compiled-code cache (`cache.key`, 32 bytes, 0600: in $XDG_STATE_HOME/cvmc,
 * else ~/.local/state/cvmc), so an entry is trusted only when cvm-aot wrote it, for this key, with this secret.
 * The payload is read once into memory, checked there, and the object loaded from that memory (a sealed memfd):
 * what runs is what was checked.
 */
#ifndef CVMC_STORE_H_
#define CVMC_STORE_H_

#include <stddef.h>

#define CVMC_KEY_CHARS 64

/* The store keys of a model's files and of a graph alone, as 64 lowercase hex digits and a NUL. */
void cvmc_model_key(const char *json, size_t json_len, const char *params, size_t params_len,
                    char key[CVMC_KEY_CHARS + 1]);
void cvmc_graph_key(const char *json, size_t json_len, char key[CVMC_KEY_CHARS + 1]);

struct cvmc_entry {
  unsigned char *data;           /* the whole entry, as read */
  size_t size;
  char kind;                     /* 'S', 'D' or 'G' */
  const unsigned char *payload;  /* after the kind byte */
  size_t payload_size;
};

#define CVMC_ENTRY_MISSING (-1)

/* Read and authenticate the entry of `key` for `target` (NULL: a graph's entry) in the store, accepting the payload
 * kinds in `kinds`: 0; CVMC_ENTRY_MISSING when there is no such entry (no message set: see cvmc_store_missing); or
 * the status of the failure (2, with the message set by cvmc_fail). `build_hint` completes the messages. */
int cvmc_store_read(const char *key, const char *target, const char *kinds, const char *build_hint,
                    struct cvmc_entry *entry);
/* The failure of an entry that is not in the store (what: "model" or "graph"): 2, with the message set. */
int cvmc_store_missing(const char *what, const char *key, const char *build_hint);
void cvmc_entry_free(struct cvmc_entry *entry);

/* dlopen a shared object held in memory (a sealed memfd): 0, the handle and the memfd, to close after dlclose (its
 * number names the object to dlopen while it is loaded); or a status (2) after cvmc_fail. */
int cvmc_open_object(const unsigned char *object, size_t size, const char *key, void **handle, int *fd);

/* Set the thread's last error (printed on stderr as the runtime prints its errors) and return `status`. */
int cvmc_fail(int status, const char *format, ...) __attribute__((format(printf, 2, 3)));

#endif  /* CVMC_STORE_H_ */
