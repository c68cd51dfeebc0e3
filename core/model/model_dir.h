// The one model-directory loader (ARCHITECTURE.md "Model directory"): manifest, GPT, VQ, vocabulary
// and the optional drafter weights. Every mismatch between model.json and the weight files is
// collected and reported in one error, so a user fixes a broken directory in one pass.
#pragma once
#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>

#include "io/manifest.h"
#include "model/conditioning.h"
#include "model/device.h"
#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/parallel_head.h"
#include "model/llamagen/vq.h"
#include "model/llamagen/vq_decoder.h"
#include "model/text/text_encoder.h"

namespace adtree::model {

struct LoadOptions {
  std::string device = "cpu";  // "cpu" | "cuda" | "cuda:N"
  std::string dtype = "fp32";  // "fp32" | "bf16" | "fp16"
  bool load_vq = true;
  // The picture decoder's precision on the CPU (model/llamagen/vq_decoder.h): "auto" (bf16 where
  // the CPU has AVX512-BF16, else fp32), "fp32" or "bf16".
  std::string vq_dtype = "auto";
  // The lean path's packed panels kept on disk per model (model/cpu/pack_cache.h), so the next load
  // maps them instead of packing and skips the value check: Auto for a model whose panels exceed
  // 64 MiB (a small model packs in milliseconds), Always, or Off; $ADTREE_PACK_CACHE=off|always
  // overrides Auto.
  enum class PackCacheUse { Off, Auto, Always };
  PackCacheUse pack_cache = PackCacheUse::Auto;
  std::string cache_root;  // the cache's root folder; empty: $XDG_CACHE_HOME or ~/.cache
  // A t2i-embeddings model's text encoder (a T5 directory, model/text/text_encoder.h) in place of
  // the one model.json names; it runs on `device` in `dtype`. Other kinds of model ignore it.
  std::string text_encoder;
  // Hears where a long load is ("hashing the weights", "packing the weights", ...) and the
  // fraction done, 0..1: a first load of a large model hashes and packs for seconds.
  std::function<void(const std::string& stage, double fraction)> progress;
};

struct ModelBundle {
  std::string dir;
  // "sha256:..." over model.json and the weight and vocabulary files (io/file_hash.h); empty in a
  // build without libcrypto.
  std::string hash;
  io::Manifest manifest;
  GptConfig gpt_config;
  VqConfig vq_config;
  std::shared_ptr<const Gpt> gpt;
  std::shared_ptr<const VqModel> vq;  // null when !load_vq
  // The fast picture decoder on the CPU (null on CUDA or when !load_vq): use decode_picture.
  std::shared_ptr<const VqDecoder> vq_decoder;
  Vocabulary vocab;
  TensorMap drafter_weights;  // empty without drafter.safetensors
  // The EAGLE head (null without drafter.safetensors). It refers to *gpt, which the bundle owns.
  std::shared_ptr<const Drafter> drafter;
  // model.json's drafter.output is "mixed": the head predicts the CFG-mixed distribution from the
  // conditional stream alone (else "streams", the default: each CFG stream, mixed after).
  bool drafter_mixed = false;
  // The parallel draft head (model/llamagen/parallel_head.h; null without parallel_head.safetensors
  // and model.json's parallel_head section). It refers to *gpt too.
  TensorMap parallel_weights;
  std::shared_ptr<const ParallelHead> parallel_head;
  // The packed-panel cache: whether this load mapped it (and skipped the value check), and why it
  // could not be written when that failed (the load itself succeeded).
  bool pack_cache_hit = false;
  std::string pack_cache_warning;
  // The T5 encoder for typed prompts (null: the model takes words or classes, or a t2i-embeddings
  // model was loaded without one and takes caption-embedding files only).
  std::shared_ptr<const TextEncoder> text_encoder;
};

ModelBundle load_model_dir(const std::string& dir, const LoadOptions& opts = {});

// The pictures of `indices` [B, n] on an h x w grid (as VqModel::decode): through vq_decoder where
// the bundle has one, else the reference decoder. Throws adtree::Error without a VQ.
at::Tensor decode_picture(const ModelBundle& m, const at::Tensor& indices, int64_t h, int64_t w);

}  // namespace adtree::model
