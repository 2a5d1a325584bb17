#include "stest_pattern.h"

#include "stest_fail.h"

uint64_t stest_mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

uint8_t stest_hash_byte(uint64_t seed, size_t index)
{
    return (uint8_t)(stest_mix64(seed + (index >> 3)) >> ((index & 7) * 8));
}

void stest_hash_fill(uint8_t *dst, size_t n, uint64_t seed, size_t first)
{
    uint64_t word = stest_mix64(seed + (first >> 3));

    for (size_t i = 0; i < n; i++) {
        size_t index = first + i;
        if (i > 0 && (index & 7) == 0) word = stest_mix64(seed + (index >> 3));
        dst[i] = (uint8_t)(word >> ((index & 7) * 8));
    }
}

uint8_t stest_seq_byte(unsigned seed, size_t index)
{
    return (uint8_t)(index * 131 + seed * 29 + (index >> 11) + 1);
}

void stest_seq_fill(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; ++i) {
        buf[i] = stest_seq_byte(seed, i);
    }
}

void stest_seq_check(const char *what, size_t size, const uint8_t *buf, size_t len, unsigned seed,
                     size_t base)
{
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != stest_seq_byte(seed, base + i)) {
            stest_fail("%s size %zu: index %zu expected 0x%02x got 0x%02x", what, size, base + i,
                       stest_seq_byte(seed, base + i), buf[i]);
        }
    }
}
