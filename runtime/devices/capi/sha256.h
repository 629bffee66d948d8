/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the store's keys and tags.
 *
 *     unsigned char digest[32];
 *     cvmc_sha256(data, n, digest);
 *
 *     struct cvmc_sha256 s;                  // incrementally
 *     cvmc_sha256_init(&s);
 *     cvmc_sha256_update(&s, part, n);  ...
 *     cvmc_sha256_final(&s, digest);
 *
 *     struct cvmc_hmac h;                    // HMAC-SHA256 with a key of any length
 *     cvmc_hmac_init(&h, key, key_len);
 *     cvmc_hmac_update(&h, part, n);  ...
 *     cvmc_hmac_final(&h, tag);
 *
 * Tested against Python's hashlib and hmac (tests/runtime/test_aot_capi.py).
 */
#ifndef CVMC_SHA256_H_
#define CVMC_SHA256_H_

#include <stddef.h>
#include <stdint.h>

#define CVMC_SHA256_BYTES 32

struct cvmc_sha256 {
  uint32_t h[8];            /* the chaining state */
  uint64_t bytes;           /* the message length so far */
  unsigned char block[64];  /* the partial block */
  size_t used;              /* bytes in `block` */
};

void cvmc_sha256_init(struct cvmc_sha256 *s);
void cvmc_sha256_update(struct cvmc_sha256 *s, const void *data, size_t n);
void cvmc_sha256_final(struct cvmc_sha256 *s, unsigned char out[CVMC_SHA256_BYTES]);
void cvmc_sha256(const void *data, size_t n, unsigned char out[CVMC_SHA256_BYTES]);

struct cvmc_hmac {
  struct cvmc_sha256 inner, outer;
};

void cvmc_hmac_init(struct cvmc_hmac *h, const unsigned char *key, size_t key_len);
void cvmc_hmac_update(struct cvmc_hmac *h, const void *data, size_t n);
void cvmc_hmac_final(struct cvmc_hmac *h, unsigned char out[CVMC_SHA256_BYTES]);

#endif  /* CVMC_SHA256_H_ */
