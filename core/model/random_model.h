// Writes a randomly initialised model directory of any GPT size: what the tests (and a user trying
// a config) run on before trained weights exist.
#pragma once
#include <cstdint>
#include <string>

#include "model/llamagen/gpt_config.h"
#include "model/llamagen/vq.h"

namespace adtree::model {

// A small VQ that maps 64x64 images to a 16x16 grid (or grid*4 pixels in general).
VqConfig small_vq_config(int64_t codebook_size, int64_t grid);

// Creates `dir` (if needed) with model.json, gpt.safetensors, vq.safetensors and text.json. A
// caption model without words (t2i-embeddings) given `text_encoder`, a folder name, gets a tiny
// random T5 there (model/text/random_t5.h) that its model.json names, so typed prompts work.
void write_random_model(const std::string& dir, const GptConfig& gpt, const VqConfig& vq,
                        uint64_t seed, const std::string& name,
                        const std::string& text_encoder = "");

}  // namespace adtree::model
