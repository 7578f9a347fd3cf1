/*
 * IMA ADPCM decoder for audio on the link (docs/numeric.md §8): one block of 4-bit codes in,
 * int16 PCM out. Python twin: codegen/base/adpcm.py (decode_block), bit-exact; the host encodes
 * with the same module.
 *
 * Block: predictor i16 little-endian, step index u8 (0 .. 88), reserved u8, then ceil(n / 2)
 * code bytes, sample i's code in the low nibble of byte i / 2 for even i and in the high nibble
 * for odd i. The header is the encoder's state before the block's first sample, so a block
 * decodes on its own.
 */
#ifndef ELT_ADPCM_H
#define ELT_ADPCM_H

#include <stdint.h>

#define ELT_ADPCM_HEADER_BYTES 4u
#define ELT_ADPCM_INDEX_MAX 88u

/* Bytes of a block of n >= 1 samples. */
#define ELT_ADPCM_BLOCK_BYTES(n) (ELT_ADPCM_HEADER_BYTES + ((uint32_t)(n) + 1u) / 2u)

/* Decode the n samples of one block (ELT_ADPCM_BLOCK_BYTES(n) bytes at any alignment) into
 * out [n]. A step index above 88 in the header is taken as 88; the reserved byte is not read. */
void elt_adpcm_decode(const uint8_t *block, uint32_t n, int16_t *out);

#endif /* ELT_ADPCM_H */
