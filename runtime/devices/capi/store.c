/* The store: keys, the secret, reading and authenticating an entry, loading its object (see store.h). */
#define _GNU_SOURCE
#include "store.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"

#define MAGIC "cvmc-store-1\n"
#define MAGIC_LEN (sizeof MAGIC - 1)
#define HEADER_LEN (MAGIC_LEN + 8 + 2 * CVMC_SHA256_BYTES)
#define SECRET_BYTES 32
#define CHUNK ((size_t)1 << 20)
/* The largest payload read (cvmc.runtime.devices.aot.ENTRY_MAX): a model's object holds its params, which the C API
 * bounds by an int length. */
#define ENTRY_MAX ((uint64_t)1 << 33)

static void put_u64le(struct cvmc_sha256 *s, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = (unsigned char)(v >> (8 * i));
  cvmc_sha256_update(s, b, 8);
}

static void hex(const unsigned char digest[CVMC_SHA256_BYTES], char out[CVMC_KEY_CHARS + 1]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < CVMC_SHA256_BYTES; ++i) {
    out[2 * i] = digits[digest[i] >> 4];
    out[2 * i + 1] = digits[digest[i] & 15];
  }
  out[CVMC_KEY_CHARS] = 0;
}

void cvmc_model_key(const char *json, size_t json_len, const char *params, size_t params_len,
                    char key[CVMC_KEY_CHARS + 1]) {
  static const char domain[] = "cvmc-aot-model-1";  /* hashed with its NUL */
  struct cvmc_sha256 s;
  unsigned char digest[CVMC_SHA256_BYTES];
  cvmc_sha256_init(&s);
  cvmc_sha256_update(&s, domain, sizeof domain);
  put_u64le(&s, json_len);
  cvmc_sha256_update(&s, json, json_len);
  put_u64le(&s, params_len);
  cvmc_sha256_update(&s, params, params_len);
  cvmc_sha256_final(&s, digest);
  hex(digest, key);
}

void cvmc_graph_key(const char *json, size_t json_len, char key[CVMC_KEY_CHARS + 1]) {
  static const char domain[] = "cvmc-aot-graph-1";
  struct cvmc_sha256 s;
  unsigned char digest[CVMC_SHA256_BYTES];
  cvmc_sha256_init(&s);
  cvmc_sha256_update(&s, domain, sizeof domain);
  put_u64le(&s, json_len);
  cvmc_sha256_update(&s, json, json_len);
  cvmc_sha256_final(&s, digest);
  hex(digest, key);
}

/* The path of the secret, as cvmc.runtime.engine.cache.key_dir names its folder: $XDG_STATE_HOME/cvmc when absolute,
 * else ~/.local/state/cvmc (the home as cvmc.runtime.engine.cache._home finds it: $HOME when set and not empty, else the password entry). */
static int secret_path(char *path, size_t n) {
  const char *state = getenv("XDG_STATE_HOME");
  if (state != NULL && state[0] == '/')
    return snprintf(path, n, "%s/cvmc/cache.key", state) < (int)n ? 0 : -1;
  const char *home = getenv("HOME");
  char buf[4096];
  if (home == NULL || home[0] == 0) {  /* an empty $HOME is unset (cvmc.runtime.engine.cache._home), not "/" */
    struct passwd pw, *found = NULL;
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) == 0 && found != NULL)
      home = found->pw_dir;
  }
  if (home == NULL || home[0] != '/')
    return -1;
  return snprintf(path, n, "%s/.local/state/cvmc/cache.key", home) < (int)n ? 0 : -1;
}

/* The user's secret: a regular file of this user's that only this user may read, of exactly 32 bytes (the rules
 * of cvmc.runtime.engine.cache._read_key). */
static int read_secret(unsigned char secret[SECRET_BYTES]) {
  char path[4200];
  if (secret_path(path, sizeof path) != 0)
    return cvmc_fail(2, "no folder for the store's secret key: set $XDG_STATE_HOME or $HOME (the key is "
                        "$XDG_STATE_HOME/cvmc/cache.key, else ~/.local/state/cvmc/cache.key)");
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return cvmc_fail(2, "cannot read the store's secret key %s: %s (cvm-aot build creates it; copy it here, "
                        "mode 0600, to use a store built by another user)", path, strerror(errno));
  struct stat st;
  unsigned char buf[SECRET_BYTES + 1];
  ssize_t got = -1;
  int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0;
  if (ok) {
    do
      got = read(fd, buf, sizeof buf);
    while (got < 0 && errno == EINTR);
  }
  close(fd);
  if (!ok)
    return cvmc_fail(2, "the store's secret key %s must be a file of this user that only this user can read", path);
  if (got != SECRET_BYTES)
    return cvmc_fail(2, "the store's secret key %s holds %zd bytes, expected %d", path, got, SECRET_BYTES);
  memcpy(secret, buf, SECRET_BYTES);
  memset(buf, 0, sizeof buf);
  return 0;
}


/* Compare without a data-dependent early exit. */
static int same_tag(const unsigned char *a, const unsigned char *b) {
  unsigned char diff = 0;
  for (int i = 0; i < CVMC_SHA256_BYTES; ++i)
    diff |= a[i] ^ b[i];
  return diff == 0;
}

static void put_u64le_hmac(struct cvmc_hmac *h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = (unsigned char)(v >> (8 * i));
  cvmc_hmac_update(h, b, 8);
}

/* HMAC(secret, MAGIC || part || "\0" || name || "\0" || u64le(n)), the start of both tags (cvmc.runtime.engine.store). */
static void tag_start(struct cvmc_hmac *h, const unsigned char *secret, const char *part, const char *name,
                      uint64_t n) {
  cvmc_hmac_init(h, secret, SECRET_BYTES);
  cvmc_hmac_update(h, MAGIC, MAGIC_LEN);
  cvmc_hmac_update(h, part, strlen(part) + 1);
  cvmc_hmac_update(h, name, strlen(name) + 1);
  put_u64le_hmac(h, n);
}

static int read_exactly(int fd, unsigned char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r < 0 ? errno : EAGAIN;
    got += (size_t)r;
  }
  return 0;
}

/* Read and check the entry open on `fd`, named `name`: its head first (the length it claims is the file's, within
 * ENTRY_MAX, and its tag checks), then its payload, hashed as it is read. 0, or what to say after "the store entry
 * PATH ". */
static const char *read_sealed(int fd, const char *name, const unsigned char *secret, unsigned char **data,
                               size_t *size, int *error) {
  struct stat st;
  unsigned char head[HEADER_LEN], tag[CVMC_SHA256_BYTES];
  *error = 0;
  if (fstat(fd, &st) != 0)
    return *error = errno, "cannot be read";
  if (!S_ISREG(st.st_mode))
    return "is not a regular file";
  if ((*error = read_exactly(fd, head, HEADER_LEN)) != 0 || memcmp(head, MAGIC, MAGIC_LEN) != 0)
    return *error = 0, "is not an entry cvm-aot writes (no header)";
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | head[MAGIC_LEN + i];
  if (n == 0 || n > ENTRY_MAX || (uint64_t)st.st_size != HEADER_LEN + n)
    return "claims a length that is not its own, or larger than any entry cvm-aot writes";
  struct cvmc_hmac h;
  tag_start(&h, secret, "head", name, n);
  cvmc_hmac_final(&h, tag);
  if (!same_tag(tag, head + MAGIC_LEN + 8))
    return "was not written by cvm-aot for this model with this user's key (its head): tagged under another key "
           "(copy the key of the user who wrote it, or rebuild the entry) or renamed";
  unsigned char *buf = malloc((size_t)n);
  if (buf == NULL)
    return *error = ENOMEM, "cannot be read";
  tag_start(&h, secret, "body", name, n);
  for (size_t got = 0; got < n;) {
    size_t want = n - got < CHUNK ? (size_t)(n - got) : CHUNK;
    if ((*error = read_exactly(fd, buf + got, want)) != 0) {
      free(buf);
      return *error == EAGAIN ? (*error = 0, "changed while read") : "cannot be read";
    }
    cvmc_hmac_update(&h, buf + got, want);
    got += want;
  }
  cvmc_hmac_final(&h, tag);
  if (!same_tag(tag, head + MAGIC_LEN + 8 + CVMC_SHA256_BYTES)) {
    free(buf);
    return "was not written by cvm-aot for this model with this user's key";
  }
  *data = buf;
  *size = (size_t)n;
  return NULL;
}

static const char *store_folder(void) {
  const char *store = getenv("CVMC_AOT_STORE");
  return store != NULL && store[0] != 0 ? store : NULL;
}

int cvmc_store_missing(const char *what, const char *key, const char *build_hint) {
  const char *store = store_folder();
  return cvmc_fail(2, "the %s of key %s is not in the store %s: compile it with `%s --store %s`", what, key,
                   store ? store : "", build_hint, store ? store : "DIR");
}

int cvmc_store_read(const char *key, const char *target, const char *kinds, const char *build_hint,
                    struct cvmc_entry *entry) {
  memset(entry, 0, sizeof *entry);
  const char *store = store_folder();
  if (store == NULL)
    return cvmc_fail(2, "$CVMC_AOT_STORE is not set: it names the folder of compiled models that "
                        "`cvm-aot build model.json params.bin --store DIR` writes");
  char path[4200], name[CVMC_KEY_CHARS + 64];
  if (target != NULL)
    snprintf(name, sizeof name, "%s.%.40s.cvmc", key, target);
  else
    snprintf(name, sizeof name, "%s.cvmc", key);
  if (snprintf(path, sizeof path, "%s/%s", store, name) >= (int)sizeof path)
    return cvmc_fail(2, "$CVMC_AOT_STORE is too long a path (%zu bytes)", strlen(store));
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return CVMC_ENTRY_MISSING;
  if (fd < 0)
    return cvmc_fail(2, "cannot open the store entry %s: %s", path, errno == ELOOP ? "it is a link" : strerror(errno));
  unsigned char secret[SECRET_BYTES];
  int status = read_secret(secret);
  if (status != 0) {
    close(fd);
    return status;
  }
  unsigned char *data = NULL;
  size_t size = 0;
  int error = 0;
  const char *why = read_sealed(fd, name, secret, &data, &size, &error);
  memset(secret, 0, sizeof secret);
  close(fd);
  if (why != NULL)
    return cvmc_fail(2, "the store entry %s %s%s%s: refused; rebuild it with `%s --store %s`", path, why,
                     error ? ": " : "", error ? strerror(error) : "", build_hint, store);
  entry->data = data;
  entry->size = size;
  entry->kind = (char)data[0];
  entry->payload = data + 1;
  entry->payload_size = size - 1;
  if (strchr(kinds, entry->kind) == NULL || entry->kind == 0) {
    cvmc_entry_free(entry);
    return cvmc_fail(2, "the store entry %s holds a payload of another kind", path);
  }
  return 0;
}

void cvmc_entry_free(struct cvmc_entry *entry) {
  free(entry->data);
  memset(entry, 0, sizeof *entry);
}

int cvmc_open_object(const unsigned char *object, size_t size, const char *key, void **handle, int *fd_out) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  if (size < sizeof elf || memcmp(object, elf, sizeof elf) != 0)
    return cvmc_fail(2, "the store entry of model %s does not hold a shared object", key);
  char name[32];
  snprintf(name, sizeof name, "cvmc-model-%.8s", key);
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return cvmc_fail(2, "cannot load model %s: memfd_create: %s", key, strerror(errno));
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, object + done, size - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return cvmc_fail(2, "cannot load model %s: writing its object: %s", key, strerror(e));
    }
    done += (size_t)w;
  }
  /* Nothing may change the object between the check and the load, nor after. */
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    int e = errno;
    close(fd);
    return cvmc_fail(2, "cannot load model %s: sealing its object: %s", key, strerror(e));
  }
  /* The memfd stays open as long as the object is loaded: dlopen knows an object by its path, and a path
   * "/proc/self/fd/N" whose N a closed memfd freed would name the next model's object too, so that dlopen handed
   * back the first model's object for the second (found by tests/fuzz/capi.py). */
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    close(fd);
    const char *why = dlerror();
    return cvmc_fail(2, "cannot load model %s: %s", key, why != NULL ? why : "dlopen failed");
  }
  *handle = h;
  *fd_out = fd;
  return 0;
}
