// Token colours of the continuous family (model.json "token_colours"): the counterpart of a VQ
// model's per-code palette. A vector token has no code to look up, so a linear map from its numbers
// to RGB lets a front end paint each token the moment it is committed, before the next preview
// decode. assemble-continuous fits it by least squares on VAE decodes of real tokens (the training
// pictures'): a map fitted on random grids misses by as much as one flat colour does, because a
// decoder shown noise answers with colours no real picture has.
#pragma once
#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <vector>

namespace adtree::model {

struct ContinuousBundle;

// (D + 1) x 3 numbers, row-major: a token v's colour is [v, 1] * map (0..255 once clamped).
// `grids` [G, N, D]: real token grids; each decoded, each cell's pixels averaged.
std::vector<float> fit_token_colours(const ContinuousBundle& m, const at::Tensor& grids);

// The colour of one token of `dim` numbers under `map` (fit_token_colours' layout), clamped.
std::array<uint8_t, 3> token_colour(const std::vector<float>& map, const float* v, int64_t dim);

}  // namespace adtree::model
