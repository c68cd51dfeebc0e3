// The one model-directory loader (ARCHITECTURE.md "Model directory"): manifest, GPT, VQ, vocabulary
// and the optional drafter weights. Every mismatch between model.json and the weight files is
// collected and reported in one error, so a user fixes a broken directory in one pass.
#pragma once
#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "io/manifest.h"
#include "model/conditioning.h"
#include "model/drafter.h"
#include "model/gpt.h"
#include "model/vq.h"

namespace adtree::model {

struct LoadOptions {
  std::string device = "cpu";  // "cpu" | "cuda" | "cuda:N"
  std::string dtype = "fp32";  // "fp32" | "bf16" | "fp16"
  bool load_vq = true;
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
  Vocabulary vocab;
  TensorMap drafter_weights;  // empty without drafter.safetensors
  // The EAGLE head (null without drafter.safetensors). It refers to *gpt, which the bundle owns.
  std::shared_ptr<const Drafter> drafter;
};

// Throws adtree::Error (no CUDA in this build, unknown dtype, ...) with a clear message.
at::Device parse_device(const std::string& name);
at::ScalarType parse_dtype(const std::string& name);

ModelBundle load_model_dir(const std::string& dir, const LoadOptions& opts = {});

}  // namespace adtree::model
