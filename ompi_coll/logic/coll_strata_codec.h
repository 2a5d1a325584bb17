/*
 * coll/strata wire formats (issue 44, first step): how float and double
 * elements may be narrowed before they cross the network between nodes,
 * and widened again where they arrive.  Pure functions of the elements: no
 * Open MPI, no memory of their own; the exchange will call them on the
 * blocks it sends and receives (docs/design.md, "Compression between
 * nodes").
 *
 *   BF16  bfloat16 (8 exponent bits, 7 stored mantissa bits) after a
 *         per-block power-of-two scale that brings the block's largest
 *         finite magnitude to [2^126, 2^127): float's range needs none, but
 *         doubles beyond it (or below its subnormals) would become
 *         infinities or zeros without it.
 *   FP16  IEEE half (5 exponent bits, 10 mantissa bits) after the same kind
 *         of scale, to [2^14, 2^15), so nothing overflows and small blocks
 *         keep their precision.
 *   FP8   E4M3 with IEEE special values (4 exponent bits, bias 7, 3 mantissa
 *         bits; exponent 15 holds infinities and NaN, so both survive;
 *         largest finite 240) after the same kind of scale, to [2^6, 2^7).
 *
 * The scale goes one binade lower where the largest magnitude would round
 * up to the next power of two: then packing a block that was unpacked
 * gives back the same bits (idempotent), as a ring that forwards what it
 * received needs for every node to end with the same result.
 *
 * Blocks of MCA_COLL_STRATA_CODEC_BLOCK elements (the last may be shorter)
 * each start with their scale's exponent (int16, little-endian in memory
 * as the host writes it: both ends are the same kind of machine), then
 * their elements.  Rounding is to nearest, ties to even, straight from the
 * element's own precision (a double is not rounded twice).  A scale never
 * turns a finite value into an infinity: the scale makes the largest
 * magnitude representable, and a value that would round up past its own
 * type's largest finite value (FLT_MAX to 2^128) takes the format's
 * largest value of its binade instead; magnitudes under half the format's smallest subnormal
 * after scaling become a zero of the same sign.
 */
#ifndef MCA_COLL_STRATA_CODEC_H
#define MCA_COLL_STRATA_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    MCA_COLL_STRATA_CODEC_NONE = 0,
    MCA_COLL_STRATA_CODEC_BF16,
    MCA_COLL_STRATA_CODEC_FP16,
    MCA_COLL_STRATA_CODEC_FP8
} mca_coll_strata_codec_t;

/* The element types a codec narrows. */
typedef enum {
    MCA_COLL_STRATA_CODEC_FLOAT,
    MCA_COLL_STRATA_CODEC_DOUBLE
} mca_coll_strata_codec_elem_t;

#define MCA_COLL_STRATA_CODEC_BLOCK 128

/* The format's name ("none", "bf16", "fp16", "fp8"), and the format a name
 * gives (false: not a format's name). */
const char *mca_coll_strata_codec_name(mca_coll_strata_codec_t codec);
bool mca_coll_strata_codec_parse(const char *name, mca_coll_strata_codec_t *codec);

/* Bytes `count` elements take on the wire in this format. */
size_t mca_coll_strata_codec_bytes(mca_coll_strata_codec_t codec, size_t count);

/* Bytes on the wire per byte of elements of `elem_bytes` each (1 for none):
 * what the cost model scales the network's bytes by. */
double mca_coll_strata_codec_ratio(mca_coll_strata_codec_t codec, size_t elem_bytes);

/* Narrow `count` elements at src into wire (codec_bytes of room). */
void mca_coll_strata_codec_pack(mca_coll_strata_codec_t codec, mca_coll_strata_codec_elem_t elem,
                                const void *src, size_t count, void *wire);
/* Widen `count` elements of wire into dst (dst = the values sent, as
 * rounded), or add them into dst (accumulate: dst += the values sent, in
 * dst's type). */
void mca_coll_strata_codec_unpack(mca_coll_strata_codec_t codec, mca_coll_strata_codec_elem_t elem,
                                  const void *wire, size_t count, void *dst, bool accumulate);

/* One value rounded as the format stores it, scale 1 (what pack and unpack
 * do to an element of a block whose scale exponent is `scale_exp`):
 * x * 2^scale_exp rounded to the format, times 2^-scale_exp.  For tests and
 * the error bound. */
double mca_coll_strata_codec_round(mca_coll_strata_codec_t codec, double x, int scale_exp);

#endif /* MCA_COLL_STRATA_CODEC_H */
