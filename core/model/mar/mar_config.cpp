#include "model/mar/mar_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "util/error.h"

namespace adtree::model {

DiffusionHeadConfig MarConfig::head() const {
  DiffusionHeadConfig h;
  h.token_dim = token_dim;
  h.cond_dim = decoder_dim;
  h.width = head_width;
  h.blocks = head_blocks;
  return h;
}

void MarConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("MAR config: " + what);
  };
  need(grid > 0 && token_dim > 0, "grid and token_dim must be positive");
  need(encoder_depth > 0 && decoder_depth > 0, "the encoder and decoder need blocks");
  need(encoder_heads > 0 && encoder_dim % encoder_heads == 0,
       "encoder_dim must be a multiple of encoder_heads");
  need(decoder_heads > 0 && decoder_dim % decoder_heads == 0,
       "decoder_dim must be a multiple of decoder_heads");
  need(mlp_ratio > 0 && buffer_size > 0 && num_classes > 0,
       "mlp_ratio, buffer_size and num_classes must be positive");
  need(norm_eps > 0, "norm_eps must be positive");
  need(head_width > 0 && head_blocks > 0, "the diffusion head needs a width and blocks");
  need(train_steps > 1 && sample_steps > 0 && sample_steps <= train_steps,
       "sample_steps must be in 1..train_steps");
}

nlohmann::json MarConfig::to_json() const {
  return {{"grid", grid},
          {"token_dim", token_dim},
          {"encoder_dim", encoder_dim},
          {"encoder_depth", encoder_depth},
          {"encoder_heads", encoder_heads},
          {"decoder_dim", decoder_dim},
          {"decoder_depth", decoder_depth},
          {"decoder_heads", decoder_heads},
          {"mlp_ratio", mlp_ratio},
          {"buffer_size", buffer_size},
          {"num_classes", num_classes},
          {"norm_eps", norm_eps},
          {"head_width", head_width},
          {"head_blocks", head_blocks},
          {"train_steps", train_steps},
          {"sample_steps", sample_steps}};
}

MarConfig MarConfig::from_json(const nlohmann::json& j) {
  MarConfig c;
  auto get = [&](const char* key, auto& field) {
    if (j.contains(key)) field = j.at(key).get<std::decay_t<decltype(field)>>();
  };
  get("grid", c.grid);
  get("token_dim", c.token_dim);
  get("encoder_dim", c.encoder_dim);
  get("encoder_depth", c.encoder_depth);
  get("encoder_heads", c.encoder_heads);
  get("decoder_dim", c.decoder_dim);
  get("decoder_depth", c.decoder_depth);
  get("decoder_heads", c.decoder_heads);
  get("mlp_ratio", c.mlp_ratio);
  get("buffer_size", c.buffer_size);
  get("num_classes", c.num_classes);
  get("norm_eps", c.norm_eps);
  get("head_width", c.head_width);
  get("head_blocks", c.head_blocks);
  get("train_steps", c.train_steps);
  get("sample_steps", c.sample_steps);
  c.validate();
  return c;
}

MarConfig MarConfig::preset(const std::string& name) {
  MarConfig c;
  auto shape = [&](int64_t dim, int64_t depth, int64_t heads, int64_t hw, int64_t hb) {
    c.encoder_dim = c.decoder_dim = dim;
    c.encoder_depth = c.decoder_depth = depth;
    c.encoder_heads = c.decoder_heads = heads;
    c.head_width = hw;
    c.head_blocks = hb;
  };
  if (name == "B") {
    shape(768, 12, 12, 1024, 6);
  } else if (name == "L") {
    shape(1024, 16, 16, 1280, 8);
  } else if (name == "H") {
    shape(1280, 20, 16, 1536, 12);
  } else if (name == "tiny") {  // tests: every structural piece, a few thousand parameters
    shape(32, 2, 4, 32, 2);
    c.grid = 4;
    c.token_dim = 4;
    c.buffer_size = 4;
    c.num_classes = 10;
    c.sample_steps = 10;
  } else {
    throw Error("MAR preset '" + name + "': expected B, L, H or tiny");
  }
  return c;
}

nlohmann::json MarConfig::default_sampling() const {
  double cfg = 1.0;
  const std::pair<const char*, double> released[] = {{"B", 2.9}, {"L", 3.0}, {"H", 3.2}};
  for (const auto& [name, scale] : released)
    if (to_json() == preset(name).to_json()) cfg = scale;
  return {{"num_iter", std::min<int64_t>(64, seq_len())},
          {"cfg", cfg},
          {"cfg_schedule", "linear"},
          {"temperature", 1.0}};
}

}  // namespace adtree::model
