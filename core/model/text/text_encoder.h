// A text encoder as users have it: a T5 directory in the Hugging Face layout (config.json,
// spiece.model, model.safetensors or its shards), encoder weights only, memory-mapped; every
// mismatch listed in one error, as the model loader does. It turns a typed prompt into the caption
// rows a LlamaGen t2i model reads (model/conditioning.h), remembering the last prompts it encoded.
#pragma once
#include <ATen/ATen.h>

#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "model/text/t5_encoder.h"
#include "model/text/t5_tokenizer.h"

namespace adtree::model {

struct TextEncoderOptions {
  std::string device = "cpu";
  std::string dtype = "fp32";  // "fp32" | "bf16" (| "fp16" on CUDA)
};

// One encoded caption: what condition_from_caption takes.
struct EncodedCaption {
  at::Tensor embedding;  // [L, d_model] fp32: the encoder's rows for the caption's ids
  at::Tensor mask;       // [L] bool: all true (the ids are the caption's, no padding)
  std::vector<int64_t> ids;
  bool truncated = false;  // the prompt had more pieces than the caption's slots
  int64_t pieces = 0;      // its pieces before truncation
  double ms = 0;           // encoding time (0 when it came from the memory)
  bool cached = false;
};

class TextEncoder {
 public:
  // Throws adtree::Error listing every problem of the directory in one message.
  static std::shared_ptr<const TextEncoder> load(const std::string& dir,
                                                 const TextEncoderOptions& opts = {});

  const std::string& dir() const { return dir_; }
  const std::string& hash() const {
    return hash_;
  }  // "sha256:..." of its files (empty: no libcrypto)
  const T5Config& config() const { return encoder_->config(); }
  const T5Encoder& encoder() const { return *encoder_; }
  const T5Tokenizer& tokenizer() const { return *tokenizer_; }

  // LlamaGen's caption of `prompt` (t5_tokenizer.h), at most max_length ids, encoded. The last
  // kMemory prompts are remembered per encoder; thread-safe.
  EncodedCaption encode(const std::string& prompt, int64_t max_length) const;
  static constexpr size_t kMemory = 32;

 private:
  TextEncoder() = default;
  std::string dir_, hash_;
  std::shared_ptr<const T5Encoder> encoder_;
  std::shared_ptr<const T5Tokenizer> tokenizer_;
  mutable std::mutex mutex_;
  mutable std::list<std::pair<std::string, EncodedCaption>> memory_;  // newest first
};

}  // namespace adtree::model
