// The job's own random generator (xoshiro256**, seeded through splitmix64). Sampling draws its
// uniforms here rather than from a device generator, so the same seed + settings give the same
// tokens on every build and backend, and speculative rules can share the stream with plain AR.
#pragma once
#include <cstdint>

namespace adtree {

// SplitMix64 as a pure function: a well-mixed 64-bit hash of x (x plus the golden-ratio increment,
// then the output mix). Seeds every generator here and hashes (seed, cell) for the random-shape
// baseline.
uint64_t splitmix64(uint64_t x);

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();  // [0, 1), 53 random bits

 private:
  uint64_t s_[4];
};

}  // namespace adtree
