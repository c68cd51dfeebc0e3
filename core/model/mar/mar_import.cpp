#include "model/mar/mar_import.h"

#include <cmath>

#include "io/torch_checkpoint.h"
#include "model/mar/mar_backbone.h"
#include "util/error.h"

namespace adtree::model {

namespace {

const std::string kMarHead = "diffloss.net.";

int64_t mar_dim_of(const TensorMap& s, const std::string& name, int64_t axis,
                   const std::string& what) {
  const auto it = s.find(name);
  if (it == s.end()) throw Error(what + ": no tensor '" + name + "': not a MAR checkpoint?");
  if (it->second.dim() <= axis) throw Error(what + ": '" + name + "' has too few dimensions");
  return it->second.size(axis);
}

int64_t mar_count_blocks(const TensorMap& s, const std::string& prefix, const std::string& probe) {
  int64_t n = 0;
  while (s.count(prefix + std::to_string(n) + probe)) ++n;
  return n;
}

// diffloss.net.* -> the head's names; empty for a name that is not the head's.
std::string mar_head_name(const std::string& mar) {
  if (mar.rfind(kMarHead, 0) != 0) return {};
  std::string n = mar.substr(kMarHead.size());
  // In this order: the final layer's modulation before the blocks' generic one.
  const std::pair<const char*, const char*> renames[] = {
      {"final_layer.adaLN_modulation.1.", "final.ada."},
      {"final_layer.linear.", "final.linear."},
      {"time_embed.mlp.", "time_embed."},
      {"res_blocks.", "blocks."},
      {".in_ln.", ".ln."},
      {".adaLN_modulation.1.", ".ada."}};
  for (const auto& [from, to] : renames) {
    const auto at = n.find(from);
    if (at != std::string::npos) n.replace(at, std::string(from).size(), to);
  }
  return n;
}

int mar_sample_steps_of(const nlohmann::json& args) {
  if (!args.is_object() || !args.contains("num_sampling_steps")) return 100;
  const auto& v = args.at("num_sampling_steps");
  if (v.is_number_integer()) return v.get<int>();
  if (v.is_string()) {
    try {
      return std::stoi(v.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return 100;
}

}  // namespace

int64_t mar_heads(const std::string& model_name) {
  if (model_name == "mar_base") return 12;
  if (model_name == "mar_large" || model_name == "mar_huge") return 16;
  return 0;
}

MarImport import_mar_state(const TensorMap& state, const nlohmann::json& args, int64_t heads,
                           const std::string& what) {
  MarImport out;
  out.args = args;
  MarConfig& c = out.config;
  c.encoder_dim = mar_dim_of(state, "z_proj.weight", 0, what);
  c.token_dim = mar_dim_of(state, "z_proj.weight", 1, what);
  c.num_classes = mar_dim_of(state, "class_emb.weight", 0, what);
  c.decoder_dim = mar_dim_of(state, "decoder_embed.weight", 0, what);
  const int64_t seq = mar_dim_of(state, "diffusion_pos_embed_learned", 1, what);
  c.buffer_size = mar_dim_of(state, "encoder_pos_embed_learned", 1, what) - seq;
  c.grid = int64_t(std::lround(std::sqrt(double(seq))));
  if (c.grid * c.grid != seq)
    throw Error(what + ": " + std::to_string(seq) + " tokens are not a square grid");
  c.encoder_depth = mar_count_blocks(state, "encoder_blocks.", ".norm1.weight");
  c.decoder_depth = mar_count_blocks(state, "decoder_blocks.", ".norm1.weight");
  c.mlp_ratio = mar_dim_of(state, "encoder_blocks.0.mlp.fc1.weight", 0, what) / c.encoder_dim;
  c.head_width = mar_dim_of(state, kMarHead + "input_proj.weight", 0, what);
  c.head_blocks = mar_count_blocks(state, kMarHead + "res_blocks.", ".in_ln.weight");
  c.sample_steps = mar_sample_steps_of(args);
  const std::string model_name =
      args.is_object() && args.contains("model") && args.at("model").is_string()
          ? args.at("model").get<std::string>()
          : "";
  if (heads <= 0) heads = mar_heads(model_name);
  if (heads <= 0)
    throw Error(what + ": the number of attention heads is not in the checkpoint (its model '" +
                model_name + "' is not mar_base, mar_large or mar_huge): give it (--n-head)");
  c.encoder_heads = c.decoder_heads = heads;
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  for (const auto& [name, t] : state) {
    const auto h = mar_head_name(name);
    (h.empty() ? out.backbone : out.head)[h.empty() ? name : h] = t;
  }
  require_params(mar_backbone_param_specs(c), out.backbone, what);
  require_params(diffusion_head_param_specs(c.head()), out.head, what + " (diffusion head)");
  return out;
}

MarImport import_mar(const std::string& checkpoint, int64_t heads) {
  const auto ck = io::read_torch_checkpoint(checkpoint, true, {"model_ema"});
  TensorMap state;
  for (const auto& [name, t] : ck.tensors) {
    std::string n = name;
    if (n.rfind("module.", 0) == 0) n = n.substr(7);
    state[n] = t;
  }
  auto out = import_mar_state(state, ck.args, heads, checkpoint);
  out.found_at = ck.found_at;
  return out;
}

Kl16Import import_kl16_state(const TensorMap& state, const std::string& what) {
  Kl16Import out;
  Kl16Config& c = out.config;
  c.embed_dim = mar_dim_of(state, "post_quant_conv.weight", 0, what);
  const int64_t levels = mar_count_blocks(state, "decoder.up.", ".block.0.conv1.weight");
  if (levels == 0) throw Error(what + ": no decoder.up.* blocks: not a KL VAE checkpoint?");
  c.num_res_blocks = mar_count_blocks(state, "decoder.up.0.block.", ".conv1.weight") - 1;
  c.ch = mar_dim_of(state, "decoder.up.0.block.0.conv2.weight", 0, what);
  c.ch_mult.clear();
  for (int64_t l = 0; l < levels; ++l)
    c.ch_mult.push_back(
        mar_dim_of(state, "decoder.up." + std::to_string(l) + ".block.0.conv2.weight", 0, what) /
        c.ch);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  for (const auto& [name, t] : state) {
    const bool unused = name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0 ||
                        name.rfind("loss.", 0) == 0;
    if (!unused) out.decoder[name] = t;
  }
  require_params(kl16_decoder_param_specs(c), out.decoder, what);
  return out;
}

Kl16Import import_kl16(const std::string& checkpoint) {
  return import_kl16_state(io::read_torch_checkpoint(checkpoint).tensors, checkpoint);
}

}  // namespace adtree::model
