// `adtree train assemble-continuous`: a continuous-family model directory
// (model/continuous/continuous_dir.h) from finished `train vae` and `train continuous` runs (the
// target, and optionally the draft). The VAE's encoder stays in its run folder: generation decodes
// only. Weights are stored in `dtype` (fp16 halves the directory; loading computes in fp32).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace adtree::train {

struct ContinuousAssembleOptions {
  std::string vae_dir, target_dir, draft_dir;  // draft_dir empty: AR only
  std::string out;
  std::string name = "emoji-continuous";
  std::string description;
  std::string dtype = "fp16";  // "fp16", "bf16" or "fp32"
  // Extra model.json fields (license, data); its "sampling" and "cspd" override the defaults.
  nlohmann::json card = nlohmann::json::object();
  // Unfinished target / draft runs give their latest checkpoint (load_continuous_snapshot); the
  // step goes into the provenance. For measuring long runs early; never for a shipped model.
  bool snapshots = false;
};

// Writes the directory and returns its model.json.
nlohmann::json assemble_continuous(const ContinuousAssembleOptions& o);

}  // namespace adtree::train
