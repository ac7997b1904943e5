/* sha256.h: SHA-256 of the wire (gp_wire_digest) and of file chunks (gp_chunk_hash).
 *
 * Short inputs (under GP_SHA256_LONG bytes in all) are hashed by libsodium's SHA-256, which
 * needs nothing set up; long ones by OpenSSL's, which uses the CPU's SHA extensions (1.49 GB/s
 * against libsodium's 0.29 GB/s on these machines) and is loaded (dlopen of libcrypto.so.3)
 * at the first long input. So a command that sends a few messages and moves no file never
 * loads libcrypto, whose 21,000 relocations and algorithm tables were a fifth of gsub's CPU
 * per submission. The digest is the same either way; without libcrypto every input goes to
 * libsodium.
 */
#ifndef GPOOL_COMMON_SHA256_H
#define GPOOL_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define GP_SHA256_LONG (64u << 10)

/* The digest of the concatenation of n parts. */
void gp_sha256(const void *const *parts, const size_t *lens, size_t n, uint8_t out[32]);

#endif
