// Importing released LlamaGen weights (docs/llamagen.md): a checkpoint's state dict -> the
// project's model directory. The same rules as tools/convert_llamagen.py, for `adtree convert`:
// pick the state dict, drop stray buffers, infer the configuration from the tensor shapes (n_head
// and the grid cannot be inferred: they come from the model name or flags), and let the model
// layer's own parameter specs reject anything unknown or missing.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "model/llamagen/gpt_config.h"
#include "model/llamagen/vq.h"
#include "model/params.h"

namespace adtree::model {

// A state dict from a file: .safetensors, or a torch.save() checkpoint (.pt/.pth/.bin, read by
// io/torch_checkpoint.h without Python): the whole file, "model", "module", "state_dict" or
// "ema". Leading "module." / "_orig_mod." prefixes are stripped. `args`, when given, receives the
// checkpoint's saved training arguments as JSON (null when it has none).
// `verify` false: a torch.save() file's storages are not checked against their CRC-32 (shapes
// only).
TensorMap read_state_dict(const std::string& path, nlohmann::json* args = nullptr,
                          bool verify = true);

// Names a released checkpoint carries that are not weights (RoPE tables, masks, KV caches,
// codebook usage counters). Everything else must be a known weight.
bool is_stray_buffer(const std::string& name);

// n_head of a LlamaGen size from a model name ("c2i_XL_384", "GPT-L", "t2i_XL_stage1_256"):
// B 12, L 16, XL 20, XXL 24, 3B 32; 0 when the name says no size.
int64_t llamagen_heads(const std::string& model_name);
// Image size in pixels from a trailing _256 / _384 / _512 in the name; 0 when absent.
int64_t llamagen_image_size(const std::string& model_name);

struct GptImportOptions {
  std::string model_name;  // for n_head and the image size
  // Further names to read them from, in order, when model_name says nothing: the checkpoint's
  // file name, its saved arguments' gpt_model (tools/convert_llamagen.py's order).
  std::vector<std::pair<std::string, std::string>> more_names;  // {name, where it came from}
  int64_t saved_image_size = 0;  // the saved arguments' image_size: the last resort
  int64_t n_head = 0;            // > 0 overrides the name
  int64_t grid = 0;              // > 0: the token grid side; else image_size / vq_factor
  int64_t image_size = 0;        // > 0 overrides the name
  int64_t vq_factor = 16;        // VQ downsampling (16 for VQ-16)
};

struct Imported {
  TensorMap weights;                 // exactly the names the model layer expects
  std::vector<std::string> dropped;  // stray buffers left out
};

// GPT config from the shapes (+ options); throws adtree::Error naming what is missing/ambiguous.
// `how`, when given, receives where n_head and the grid came from ("n_head 16 from size L in ...").
GptConfig infer_gpt_config(const TensorMap& sd, const GptImportOptions& opts,
                           std::string* how = nullptr);
// The GPT's weights checked against gpt_param_specs(cfg) (every problem listed in one error).
Imported import_gpt(const TensorMap& sd, const GptConfig& cfg);

VqConfig infer_vq_config(const TensorMap& sd);
Imported import_vq(const TensorMap& sd, const VqConfig& cfg);

// An EAGLE-1 draft head for `target`: LANTERN's Hugging Face names (q/k/v/o_proj, mlp.gate/up/
// down_proj, post_attention_layernorm; q, k, v fused into wqkv, RMSNorm eps 1e-6, no rotate-half
// permutation: LANTERN applies LlamaGen's 2-D RoPE) or the app's own (eps `native_norm_eps`).
// Its embed_tokens.weight is dropped (the target's is used, as in EAGLE); `warning` says so when
// it differs from `tok_embeddings`.
struct ImportedDrafter {
  TensorMap weights;
  double norm_eps = 1e-5;
  std::string source;   // "lantern-hf" or "adtree"
  std::string warning;  // empty, or why the user should look
};
ImportedDrafter import_drafter(TensorMap sd, const GptConfig& target,
                               const at::Tensor& tok_embeddings, double native_norm_eps);

}  // namespace adtree::model
