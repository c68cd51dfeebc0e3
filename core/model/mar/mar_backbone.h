// MAR's MAE encoder and decoder (issue "MAR checkpoints"; LTH14/mar models/mar.py,
// forward_mae_encoder and forward_mae_decoder), for inference, read top to bottom:
//   x = z_proj(tokens)                                   tokens [B, N, D], N = grid^2
//   x = [class embedding in every buffer slot ; x] + encoder_pos_embed_learned, then z_proj_ln
//   keep the buffer and the known tokens; encoder blocks; encoder_norm
//   y = decoder_embed(x), the kept rows put back among mask_token rows   [B, buffer + N, Dd]
//   y = decoder_norm(decoder blocks(y + decoder_pos_embed_learned)) without the buffer
//   z = y + diffusion_pos_embed_learned                  [B, N, Dd]: each token's head condition
// A block is timm's ViT Block: x += proj(attention(qkv(norm1(x)))); x += fc2(gelu(fc1(norm2(x)))),
// every kept position attending to every other (no causal mask), GELU the exact (erf) one.
// Weights keep MAR's names (encoder_blocks.0.attn.qkv.weight, ...), so a converted checkpoint
// is MAR's own state dict.
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "model/cpu/packed_weight.h"
#include "model/mar/mar_config.h"
#include "model/params.h"

namespace adtree::model {

// MAR's names and shapes, its diffusion head excluded; Init follows MAR's own initialisation
// (xavier-uniform linears, N(0, 0.02) embeddings, unit LayerNorms).
std::vector<ParamSpec> mar_backbone_param_specs(const MarConfig& c);

class MarBackbone {
 public:
  MarBackbone(MarConfig c, const TensorMap& weights);  // checked, kept as fp32 copies

  const MarConfig& config() const { return c_; }
  // Class ids [B] -> class_emb rows [B, E]; an id of -1 gives fake_latent (CFG's null class).
  at::Tensor class_embedding(const at::Tensor& labels) const;
  // tokens [B, N, D]; unknown [B, N] bool, true where a token is not generated yet (its value is
  // ignored); every row must know as many tokens (MAR generates all rows in step). -> z [B, N, Dd].
  at::Tensor forward(const at::Tensor& tokens, const at::Tensor& unknown,
                     const at::Tensor& class_emb) const;

  // The lean CPU path: every linear layer's weight packed once into panels (model/cpu/
  // packed_gemm.h), fp32 or bf16 (packed_bf16.h: the AMX tiles where the CPU has them; the
  // activations rounded to bf16 as they enter a product). Norms, GELU and attention stay on
  // libtorch in fp32: at MAR's row counts (hundreds of tokens a pass) the products are the work.
  // The fp32 copies of the packed weights are dropped. Unpacked, every product is at::linear (the
  // reference).
  void pack(bool bf16);
  bool packed() const { return !packed_.empty(); }

 private:
  at::Tensor linear(const at::Tensor& x, const std::string& name) const;
  at::Tensor norm(const at::Tensor& x, const std::string& name, bool affine = true) const;
  at::Tensor block(const at::Tensor& x, const std::string& prefix, int64_t heads) const;
  at::Tensor encode(const at::Tensor& tokens, const at::Tensor& keep,
                    const at::Tensor& class_emb) const;
  at::Tensor decode(const at::Tensor& x, const at::Tensor& keep) const;

  MarConfig c_;
  TensorMap w_;
  std::map<std::string, PackedWeight> packed_;  // by layer name ("encoder_blocks.0.attn.qkv")
};

}  // namespace adtree::model
