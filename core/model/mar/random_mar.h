// A MAR model directory with random weights (issue "MAR checkpoints"): `adtree model random
// --family mar`, the suite's MAR engine and studio tests, and the bench's cost of the released
// shapes. The backbones follow MAR's own initialisation (model/mar/mar_backbone.h); the layers MAR
// zero-initialises (the head's AdaLN modulations and output) are filled with noise, so a random
// draft and target differ and CSpD refuses drafts as it would on unrelated models. Random weights
// draw noise: the pictures say nothing, the costs are the real shapes' costs.
#pragma once
#include <cstdint>
#include <string>

namespace adtree::model {

struct RandomMarRequest {
  std::string out;
  std::string shape = "tiny";  // MarConfig::preset: B, L, H or tiny
  std::string draft;           // "": no draft; else a preset on the same tokens
  // The VAE: "kl16" MAR's KL-16 shape (256-pixel pictures from 16 x 16 tokens: the shapes B, L, H
  // need it); "small" a few-channel LDM decoder of the same factor (quick pictures for tests).
  std::string vae = "small";
  uint64_t seed = 0;
  std::string name;  // "": "random MAR-<shape>"
};

// Writes the directory as `adtree convert --mar` does (model/mar/mar_dir.h; nothing is left
// behind on failure). Throws adtree::Error for an unknown preset or a draft on other tokens.
void write_random_mar_model(const RandomMarRequest& r);

}  // namespace adtree::model
