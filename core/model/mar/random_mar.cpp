#include "model/mar/random_mar.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "model/class_names.h"
#include "model/mar/mar_dir.h"
#include "util/error.h"

namespace adtree::model {

namespace {

// MAR's own initialisation, then noise where it puts zeros (the head's AdaLN modulations and
// output layer: a zero head would give every token the same trajectory), scaled by the fan-in so
// the products keep their size.
TensorMap random_weights(const std::vector<ParamSpec>& specs, uint64_t seed) {
  auto w = init_params(specs, seed);
  auto gen = at::detail::createCPUGenerator(seed + 17);
  for (auto& [k, t] : w) {
    if (t.dim() < 2 || t.abs().max().item<float>() != 0.0f) continue;
    t.normal_(0.0, 0.5 / std::sqrt(double(t.size(1))), gen);
  }
  return w;
}

MarImport random_mar(const std::string& shape, int64_t token_dim, int64_t grid, int64_t classes,
                     uint64_t seed) {
  MarImport m;
  m.config = MarConfig::preset(shape);
  if (token_dim > 0) {  // a draft takes the target's tokens and classes
    m.config.token_dim = token_dim;
    m.config.grid = grid;
    m.config.num_classes = classes;
  }
  m.config.validate();
  m.backbone = random_weights(mar_backbone_param_specs(m.config), seed);
  m.head = random_weights(diffusion_head_param_specs(m.config.head()), seed + 1);
  m.found_at = "random";
  return m;
}

Kl16Import random_kl16(const std::string& kind, int64_t token_dim, uint64_t seed) {
  Kl16Import v;
  v.config.embed_dim = token_dim;
  if (kind == "small") {
    v.config.ch = 8;
    v.config.norm_groups = 4;
    v.config.num_res_blocks = 1;
  } else if (kind != "kl16") {
    throw Error("random MAR: --vae must be kl16 or small, got '" + kind + "'");
  }
  v.config.validate();
  v.decoder = random_weights(kl16_decoder_param_specs(v.config), seed);
  return v;
}

}  // namespace

void write_random_mar_model(const RandomMarRequest& r) {
  MarDirParts p;
  p.target = random_mar(r.shape, 0, 0, 0, r.seed);
  const auto& c = p.target.config;
  if (!r.draft.empty())
    p.draft = std::make_unique<MarImport>(
        random_mar(r.draft, c.token_dim, c.grid, c.num_classes, r.seed + 100));
  p.vae = random_kl16(r.vae, c.token_dim, r.seed + 200);
  std::vector<std::string> warnings;
  p.classes = class_names("", c.num_classes, warnings);
  p.name = r.name.empty() ? "random MAR-" + r.shape : r.name;
  p.description = "random weights in MAR's layout: draws noise (costs are the shape's own)";
  p.provenance = {{"tool", "adtree model random --family mar"},
                  {"shape", r.shape},
                  {"draft", r.draft},
                  {"vae", r.vae},
                  {"seed", r.seed}};
  write_mar_dir(p, r.out);
}

}  // namespace adtree::model
