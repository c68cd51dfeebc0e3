#include "model/llamagen/llamagen_import.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "util/error.h"

namespace adtree::model {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string strip_prefixes(std::string name) {
  for (const char* p : {"module.", "_orig_mod."}) {
    while (name.rfind(p, 0) == 0) name = name.substr(std::char_traits<char>::length(p));
  }
  return name;
}

int64_t count_indexed(const TensorMap& sd, const std::string& prefix, const std::string& suffix) {
  int64_t n = 0;
  while (sd.count(prefix + std::to_string(n) + suffix)) ++n;
  return n;
}

const at::Tensor& need(const TensorMap& sd, const std::string& name, const std::string& what) {
  auto it = sd.find(name);
  if (it == sd.end()) throw Error(what + ": the checkpoint has no tensor '" + name + "'");
  return it->second;
}

Imported checked(const TensorMap& sd, const std::vector<ParamSpec>& specs,
                 const std::string& what) {
  Imported out;
  for (const auto& [name, t] : sd) {
    if (is_stray_buffer(name)) {
      out.dropped.push_back(name);
    } else {
      out.weights.emplace(name, t);
    }
  }
  require_params(specs, out.weights, what);
  return out;
}

}  // namespace

TensorMap read_state_dict(const std::string& path, nlohmann::json* args, bool verify) {
  if (!std::filesystem::is_regular_file(path)) throw Error(path + ": no such checkpoint file");
  if (args != nullptr) *args = nullptr;
  TensorMap out;
  if (ends_with(path, ".safetensors")) {
    for (auto& [k, t] : io::map_safetensors(path)) out[strip_prefixes(k)] = t;
    return out;
  }
  auto ckpt = io::read_torch_checkpoint(path, verify);
  for (auto& [k, t] : ckpt.tensors) out[strip_prefixes(k)] = t;
  if (args != nullptr) *args = std::move(ckpt.args);
  return out;
}

bool is_stray_buffer(const std::string& n) {
  // The same list as tools/convert_llamagen.py's HARMLESS (incl. Hugging Face rotary caches).
  return ends_with(n, "freqs_cis") || ends_with(n, "causal_mask") ||
         n.find("kv_cache") != std::string::npos || ends_with(n, "k_cache") ||
         ends_with(n, "v_cache") || n == "quantize.codebook_used" ||
         ends_with(n, "rotary_emb.inv_freq") || ends_with(n, "rotary_emb.cos_cached") ||
         ends_with(n, "rotary_emb.sin_cached");
}

namespace {
// "c2i_XL_384.pt" -> {"c2i", "XL", "384", "pt"}: LlamaGen names separate their parts with _ - / .
std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts(1);
  for (char ch : name) {
    if (ch == '_' || ch == '-' || ch == '/' || ch == '.') {
      if (!parts.back().empty()) parts.emplace_back();
    } else {
      parts.back().push_back(ch);
    }
  }
  if (parts.back().empty()) parts.pop_back();
  return parts;
}
}  // namespace

int64_t llamagen_heads(const std::string& model_name) {
  static const std::vector<std::pair<std::string, int64_t>> sizes{
      {"B", 12}, {"L", 16}, {"XL", 20}, {"XXL", 24}, {"XXXL", 40}, {"3B", 32}};
  for (const auto& part : name_parts(model_name)) {
    for (const auto& [size, heads] : sizes) {
      if (part == size) return heads;
    }
  }
  return 0;
}

int64_t llamagen_image_size(const std::string& model_name) {
  for (const auto& part : name_parts(model_name)) {
    for (int64_t px : {256, 384, 512, 768, 1024}) {
      if (part == std::to_string(px)) return px;
    }
  }
  return 0;
}

GptConfig infer_gpt_config(const TensorMap& sd, const GptImportOptions& opts, std::string* how) {
  const std::string what = "GPT checkpoint";
  GptConfig c;
  const auto& tok = need(sd, "tok_embeddings.weight", what);
  if (tok.dim() != 2) throw Error(what + ": tok_embeddings.weight must be 2-D");
  c.vocab_size = tok.size(0);
  c.dim = tok.size(1);
  c.n_layer = count_indexed(sd, "layers.", ".attention.wqkv.weight");
  if (c.n_layer == 0) throw Error(what + ": no layers.N.attention.wqkv.weight tensors");
  if (sd.count("cls_embedding.embedding_table.weight")) {
    c.cond = CondKind::Class;
    c.num_classes = sd.at("cls_embedding.embedding_table.weight").size(0) - 1;
  } else if (sd.count("cls_embedding.cap_proj.fc1.weight")) {
    c.cond = CondKind::Caption;
    c.cap_dim = sd.at("cls_embedding.cap_proj.fc1.weight").size(1);
    c.cond_len = need(sd, "cls_embedding.uncond_embedding", what).size(0);
    c.num_words = 0;
  } else {
    throw Error(what +
                ": neither cls_embedding.embedding_table.weight (c2i) nor "
                "cls_embedding.cap_proj.fc1.weight (t2i): not a LlamaGen GPT");
  }
  // FFN width: int(8 dim / 3) rounded up to multiple_of; find the multiple that gives w1's rows.
  const int64_t hidden = need(sd, "layers.0.feed_forward.w1.weight", what).size(0);
  c.multiple_of = 0;
  for (int64_t m : {256, 128, 64, 32, 16, 8, 4, 2, 1}) {
    GptConfig t = c;
    t.multiple_of = m;
    if (t.ffn_hidden() == hidden) {
      c.multiple_of = m;
      break;
    }
  }
  if (c.multiple_of == 0) {
    throw Error(what + ": FFN width " + std::to_string(hidden) +
                " is not int(8 * dim / 3) rounded up to any power of two (dim " +
                std::to_string(c.dim) + ")");
  }
  // Names to read n_head and the image size from, most trusted first.
  std::vector<std::pair<std::string, std::string>> names;
  if (!opts.model_name.empty()) names.emplace_back(opts.model_name, "--model");
  names.insert(names.end(), opts.more_names.begin(), opts.more_names.end());
  std::string heads_from = "--n-head", grid_from = "--grid";
  c.n_head = opts.n_head;
  for (size_t k = 0; c.n_head <= 0 && k < names.size(); ++k) {
    c.n_head = llamagen_heads(names[k].first);
    heads_from = names[k].second + " '" + names[k].first + "'";
  }
  if (c.n_head <= 0) {
    throw Error(
        "the number of attention heads cannot be read from the weights: give the "
        "LlamaGen model name (--model c2i_XL_384, GPT-B, ...) or --n-head");
  }
  if (c.dim % c.n_head != 0 || (c.dim / c.n_head) % 4 != 0) {
    throw Error(std::to_string(c.n_head) + " heads do not divide dim " + std::to_string(c.dim) +
                " into head sizes divisible by 4");
  }
  int64_t grid = opts.grid;
  if (grid <= 0) {
    int64_t px = opts.image_size;
    std::string px_from = "--image-size";
    for (size_t k = 0; px <= 0 && k < names.size(); ++k) {
      px = llamagen_image_size(names[k].first);
      px_from = names[k].second + " '" + names[k].first + "'";
    }
    if (px <= 0) px = opts.saved_image_size, px_from = "the checkpoint's saved arguments";
    if (px <= 0) {
      throw Error(
          "the token grid cannot be read from the weights: give --image-size (256, 384, "
          "512), --grid, or a model name ending in the image size (c2i_L_256)");
    }
    if (px % opts.vq_factor != 0) throw Error("image size must be a multiple of the VQ factor");
    grid = px / opts.vq_factor;
    grid_from = std::to_string(px) + " px from " + px_from + " / " + std::to_string(opts.vq_factor);
  }
  if (how != nullptr) {
    *how = "n_head " + std::to_string(c.n_head) + " from " + heads_from + "; grid " +
           std::to_string(grid) + "x" + std::to_string(grid) + " from " + grid_from;
  }
  c.grid_h = c.grid_w = grid;
  c.validate();
  return c;
}

Imported import_gpt(const TensorMap& sd, const GptConfig& cfg) {
  return checked(sd, gpt_param_specs(cfg), "GPT checkpoint");
}

VqConfig infer_vq_config(const TensorMap& sd) {
  const std::string what = "VQ checkpoint";
  VqConfig c;
  const auto& cb = need(sd, "quantize.embedding.weight", what);
  c.codebook_size = cb.size(0);
  c.codebook_dim = cb.size(1);
  c.z_channels = need(sd, "post_quant_conv.weight", what).size(0);
  const int64_t levels = count_indexed(sd, "decoder.conv_blocks.", ".res.0.conv1.weight");
  if (levels == 0) throw Error(what + ": no decoder.conv_blocks.N tensors");
  // Decoder level l runs at ch * ch_mult[levels - 1 - l]; its last level's width is ch * ch_mult[0]
  // and LlamaGen's ch_mult starts at 1 (the encoder's conv_in says it exactly when present).
  std::vector<int64_t> width(static_cast<size_t>(levels));
  for (int64_t l = 0; l < levels; ++l) {
    width[size_t(l)] =
        sd.at("decoder.conv_blocks." + std::to_string(l) + ".res.0.conv1.weight").size(0);
  }
  auto enc = sd.find("encoder.conv_in.weight");
  c.ch = enc != sd.end() ? enc->second.size(0) : width.back();
  c.ch_mult.clear();
  for (int64_t l = levels - 1; l >= 0; --l) {
    if (width[size_t(l)] % c.ch != 0)
      throw Error(what + ": decoder widths are not multiples of ch");
    c.ch_mult.push_back(width[size_t(l)] / c.ch);
  }
  c.num_res_blocks = count_indexed(sd, "decoder.conv_blocks.0.res.", ".conv1.weight") - 1;
  if (c.num_res_blocks < 1) throw Error(what + ": decoder levels need at least two res blocks");
  c.validate();
  return c;
}

Imported import_vq(const TensorMap& sd, const VqConfig& cfg) {
  const bool enc = sd.count("encoder.conv_in.weight") > 0;
  return checked(sd, vq_param_specs(cfg, enc), "VQ checkpoint");
}

namespace {

const std::map<std::string, std::string>& hf_drafter_names() {
  static const std::map<std::string, std::string> m = {
      {"layers.0.self_attn.o_proj.weight", "layers.0.attention.wo.weight"},
      {"layers.0.mlp.gate_proj.weight", "layers.0.feed_forward.w1.weight"},
      {"layers.0.mlp.up_proj.weight", "layers.0.feed_forward.w3.weight"},
      {"layers.0.mlp.down_proj.weight", "layers.0.feed_forward.w2.weight"},
      {"layers.0.post_attention_layernorm.weight", "layers.0.ffn_norm.weight"}};
  return m;
}

std::string embedding_warning(const at::Tensor& emb, const at::Tensor& tok) {
  if (!tok.defined()) return "";
  if (emb.sizes() != tok.sizes()) {
    return "the drafter's embed_tokens.weight has another shape than the target's "
           "tok_embeddings; the target's is used, as in EAGLE";
  }
  if (at::equal(emb, tok.to(emb.scalar_type()))) return "";
  const double d = (emb.to(at::kFloat) - tok.to(at::kFloat)).abs().max().item<double>();
  return "the drafter's embed_tokens.weight differs from the target's tok_embeddings (max "
         "|difference| " +
         std::to_string(d) + "); the target's is used, as in EAGLE";
}

}  // namespace

ImportedDrafter import_drafter(TensorMap sd, const GptConfig& target,
                               const at::Tensor& tok_embeddings, double native_norm_eps) {
  const std::string what = "drafter checkpoint";
  ImportedDrafter out;
  if (auto it = sd.find("embed_tokens.weight"); it != sd.end()) {
    out.warning = embedding_warning(it->second, tok_embeddings);
    sd.erase(it);
  }
  const char* qkv[] = {"layers.0.self_attn.q_proj.weight", "layers.0.self_attn.k_proj.weight",
                       "layers.0.self_attn.v_proj.weight"};
  bool hf = false, native = false;
  for (const auto& [k, t] : sd) {
    hf |= hf_drafter_names().count(k) > 0 || k.find(".self_attn.") != std::string::npos;
    native |= k.rfind("layers.", 0) == 0 && (k.find(".attention.") != std::string::npos ||
                                             k.find(".feed_forward.") != std::string::npos);
  }
  if (hf && native) throw Error(what + ": mixes Hugging Face names with the app's names");
  if (hf) {
    std::vector<at::Tensor> parts;
    for (const char* k : qkv) parts.push_back(need(sd, k, what));
    for (const char* k : qkv) sd.erase(k);
    sd["layers.0.attention.wqkv.weight"] = at::cat(parts, 0);
    TensorMap renamed;
    for (auto& [k, t] : sd) {
      const auto r = hf_drafter_names().find(k);
      renamed[r == hf_drafter_names().end() ? k : r->second] = t;
    }
    sd = std::move(renamed);
  }
  out.weights = checked(sd, drafter_param_specs(target), what).weights;
  out.norm_eps = hf ? 1e-6 : native_norm_eps;
  out.source = hf ? "lantern-hf" : "adtree";
  return out;
}

}  // namespace adtree::model
