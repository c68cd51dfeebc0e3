// A continuous-family model directory with random weights (issue "CSpD"): what the engine's and
// the studio's tests load, and `adtree model random --family continuous`. It draws noise, but
// every path (AR, CSpD, previews, maps) runs on it as on a trained one.
#pragma once
#include <cstdint>
#include <string>

namespace adtree::model {

// Writes a micro model (a 4x4 grid of 4-d tokens, 8x8 pictures, a 12-word vocabulary: "w0" ..
// "w11") with a draft model, into `dir` (created). The heads' zero-initialised layers are filled
// too, so target and draft differ and CSpD refuses some drafts.
void write_random_continuous_model(const std::string& dir, uint64_t seed = 0);

}  // namespace adtree::model
