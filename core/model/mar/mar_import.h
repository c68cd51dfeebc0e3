// Importing a MAR checkpoint (issue "MAR checkpoints"): LTH14/mar's checkpoint-last.pth, read
// without Python (io/torch_checkpoint.h). Sampling uses the EMA weights, so "model_ema" wins over
// "model"; the optimizer, scaler and epoch are not read. The shape is inferred from the tensors;
// the number of attention heads cannot be, so it comes from the saved arguments' model name
// (mar_base 12, mar_large 16, mar_huge 16) or is given. The diffusion head is renamed to
// model/continuous/diffusion_head.h's names; every other tensor keeps MAR's name, and the
// parameter specs refuse anything unknown or missing.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "model/mar/kl16_decoder.h"
#include "model/mar/mar_config.h"
#include "model/params.h"

namespace adtree::model {

struct MarImport {
  MarConfig config;
  TensorMap backbone;    // MAR's names (model/mar/mar_backbone.h)
  TensorMap head;        // the diffusion head's names (model/continuous/diffusion_head.h)
  nlohmann::json args;   // the saved training arguments, null when there are none
  std::string found_at;  // the checkpoint key the weights came from ("model_ema", ...)
};

// Heads for a MAR model name ("mar_base" 12, "mar_large" 16, "mar_huge" 16); 0 for another.
int64_t mar_heads(const std::string& model_name);

// `heads` > 0 overrides the saved model name. Throws adtree::Error naming the file for anything
// it does not recognise.
MarImport import_mar(const std::string& checkpoint, int64_t heads = 0);
// The same on a state dict already read (MAR's names, no "module." prefix).
MarImport import_mar_state(const TensorMap& state, const nlohmann::json& args, int64_t heads,
                           const std::string& what);

struct Kl16Import {
  Kl16Config config;
  TensorMap decoder;  // post_quant_conv and decoder.*: what a picture needs
};

// MAR's kl16.ckpt ({"model": state dict}): the shape inferred from the decoder's tensors (ch_mult
// starting at 1, as LDM's), latent_scale MAR's 0.2325. The encoder, quant_conv and the training
// loss's networks ("loss.*", which MAR's own loader skips) are left out; any other unknown tensor
// is an error.
Kl16Import import_kl16(const std::string& checkpoint);
Kl16Import import_kl16_state(const TensorMap& state, const std::string& what);

}  // namespace adtree::model
