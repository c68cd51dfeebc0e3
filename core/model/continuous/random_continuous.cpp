#include "model/continuous/random_continuous.h"

#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "model/conditioning.h"
#include "model/continuous/continuous_gpt.h"
#include "model/continuous/kl_vae.h"

namespace adtree::model {

namespace {

std::map<std::string, at::Tensor> random_filled(const std::vector<ParamSpec>& specs,
                                                uint64_t seed) {
  auto w = init_params(specs, seed);
  auto gen = at::detail::createCPUGenerator(seed + 17);
  std::map<std::string, at::Tensor> out;
  for (auto& [k, t] : w) {
    if (t.abs().max().item<float>() == 0.0f && k.find("bias") == std::string::npos)
      t.normal_(0.0, 0.1, gen);
    out.emplace(k, t);
  }
  return out;
}

ContinuousConfig micro_continuous(int64_t dim, int64_t layers, int64_t width) {
  ContinuousConfig c;
  c.backbone = GptConfig::preset("micro");
  c.backbone.vocab_size = 2;
  c.backbone.dim = dim;
  c.backbone.n_layer = layers;
  c.head.token_dim = 4;
  c.head.cond_dim = dim;
  c.head.width = width;
  c.head.blocks = 1;
  c.head.freq_dim = 32;
  c.train_steps = 100;
  c.sample_steps = 5;
  return c;
}

}  // namespace

void write_random_continuous_model(const std::string& dir, uint64_t seed) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  KlVaeConfig v;
  v.latent_dim = 4, v.ch = 8, v.ch_mult = {1, 2}, v.z_channels = 8, v.norm_groups = 4;
  const auto target = micro_continuous(64, 2, 32), draft = micro_continuous(32, 1, 16);
  io::write_safetensors((fs::path(dir) / "vae.safetensors").string(),
                        random_filled(kl_vae_param_specs(v, false), seed));
  io::write_safetensors((fs::path(dir) / "target.safetensors").string(),
                        random_filled(continuous_param_specs(target), seed + 1));
  io::write_safetensors((fs::path(dir) / "draft.safetensors").string(),
                        random_filled(continuous_param_specs(draft), seed + 2));
  std::vector<std::string> words;
  for (int i = 0; i < target.backbone.num_words; ++i) words.push_back("w" + std::to_string(i));
  Vocabulary(Vocabulary::Kind::Words, words).save((fs::path(dir) / "text.json").string());
  const nlohmann::json m{
      {"format", "adtree-continuous"},
      {"family", "continuous"},
      {"name", "random continuous"},
      {"description", "random weights: draws noise"},
      {"vae", v.to_json()},
      {"target", target.to_json()},
      {"draft", draft.to_json()},
      {"sampling", {{"cfg", 2.0}, {"temperature", 1.0}}},
      {"cspd", {{"gamma", 3}, {"prefill_ratio", 0.1}, {"inner_temperature", 2.0}}},
      {"provenance", {{"tool", "adtree model random"}}}};
  std::ofstream((fs::path(dir) / "model.json").string()) << m.dump(2) << "\n";
}

}  // namespace adtree::model
