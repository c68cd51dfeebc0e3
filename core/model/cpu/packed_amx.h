// The bf16 panels' product on Intel AMX (AMX-BF16): the 16-row tiles that turn a verification
// block of up to 16 rows into one pass over the weights. A product of 2 to 16 rows on the vector
// kernels is arithmetic-bound on two cores (docs/PERFORMANCE.md, "Verification blocks"); on the
// tiles it costs what streaming the weights costs, as a one-token step does.
// The panels of packed_bf16.h are the tiles' B operand as they lie: 16 consecutive k-pairs of one
// panel are a 16 x 64-byte tile. Each output row depends on its own input row only (the tiles
// compute every row alike), so rows alone equal rows in a block, bit for bit; the sums are the
// tiles' own, not vdpbf16ps's order (their rounding differs in the last place).
#pragma once
#include <cstdint>

namespace adtree::model {

// Whether this process may use the AMX tiles: the CPU has AMX-BF16 and Linux granted the tile
// state (arch_prctl ARCH_REQ_XCOMP_PERM), asked once.
bool amx_available();

// One product's operands: the input rows as bf16 k-pairs (one 32-bit word per pair), x_stride
// words apart, readable up to a multiple of 16 rows (pad rows: any value; each output row depends
// on its own input row only, and theirs are dropped); panel p, pair j of the weight at
// w + (p * pairs + j) * 16.
struct AmxArgs {
  const uint32_t* xp;
  int64_t x_stride, rows;
  const uint32_t* w;
  int64_t n_out, pairs;
  const float* bias;
  float* y;
};

// Outputs of panels [p_begin, p_end) for every row, two panels at a time (p_begin even).
void panels_amx(const AmxArgs& a, int64_t p_begin, int64_t p_end);

}  // namespace adtree::model
