/*
 * Byte patterns the test programs fill buffers with and check against, so
 * that a byte from a wrong offset, call or rank shows.  Host memory only:
 * device memory goes through stest_cuda.h or stest_buf.h.
 */
#ifndef STEST_PATTERN_H
#define STEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's finaliser: every input bit flips half the output bits. */
uint64_t stest_mix64(uint64_t x);

/* The hashed pattern `seed`: byte `index` is byte index % 8 of
 * stest_mix64(seed + index / 8). */
uint8_t stest_hash_byte(uint64_t seed, size_t index);

/* dst[0, n) = bytes first.. of the hashed pattern `seed`. */
void stest_hash_fill(uint8_t *dst, size_t n, uint64_t seed, size_t first);

/* The sequence pattern of the UCT tests: cheap, and distinct for nearby
 * seeds and for offsets 2 KiB apart. */
uint8_t stest_seq_byte(unsigned seed, size_t index);

void stest_seq_fill(uint8_t *buf, size_t len, unsigned seed);

/* buf[i] must be stest_seq_byte(seed, base + i) (base: the slice's offset
 * in the whole); else stest_fail names what, size, index, expected, got. */
void stest_seq_check(const char *what, size_t size, const uint8_t *buf, size_t len, unsigned seed,
                     size_t base);

#endif /* STEST_PATTERN_H */
