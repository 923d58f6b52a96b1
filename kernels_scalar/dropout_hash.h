/* The counter-based hash behind dropout's keep mask (the contract is in backend.h at the
 * dropout slot): every backend must produce the same bits, so the mask does not depend on the
 * backend or on how the engine splits the work. */
#ifndef SIMDGRAD_DROPOUT_HASH_H
#define SIMDGRAD_DROPOUT_HASH_H

#include <stdint.h>

/* MurmurHash3's 32-bit finaliser: a bijection with full avalanche. */
static inline uint32_t sg_fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

static inline uint32_t sg_dropout_hash(uint64_t seed, uint64_t i) {
  uint32_t h = sg_fmix32((uint32_t)i * 0x9E3779B1u + (uint32_t)seed);
  return sg_fmix32(h ^ (uint32_t)(seed >> 32) ^ (uint32_t)(i >> 32));
}

#endif
