// A tiny random T5 text encoder in the Hugging Face layout (config.json, spiece.model,
// model.safetensors): what `adtree model random --cond t5` ships beside a random LlamaGen t2i
// model, so typed prompts reach the whole T5 path (tokenizer, encoder, caption rows) with no
// download.
#pragma once
#include <cstdint>
#include <string>

#include "model/text/t5_encoder.h"

namespace adtree::model {

// Creates `dir` with a SentencePiece model trained on a built-in list of plain captions ("a red
// cat", ...), and a 2-layer gated-GELU encoder of width d_model with random weights. Returns its
// config. Throws adtree::Error when the SentencePiece plug-in is missing.
T5Config write_random_t5(const std::string& dir, int64_t d_model, uint64_t seed);

}  // namespace adtree::model
