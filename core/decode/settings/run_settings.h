// The settings of one generation as a type: what it was asked (the request, the prompt, the model
// and where it ran) and what it did (the verification rule it used, its budget, whether the result
// is lossless). Statistics files and the studio carry this struct; JSON appears only where it is
// written to or read from a file (to_json / from_json hold every key).
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

#include "decode/settings/method.h"

namespace adtree::decode {

struct RunSettings {
  // What was asked. The request's trace options are not written to JSON: they change what is
  // recorded, not the picture.
  DecodeRequest request;
  std::string prompt;
  std::string model_dir, model_name, model_hash;  // hash: "sha256:..." (model::ModelBundle)
  std::string device = "cpu", dtype = "fp32";
  int64_t threads = 0;  // worker threads of a CLI run (0: not recorded)
  // A typed prompt a T5 encoder turned into the caption (t2i-embeddings models): its directory
  // and hash, and how the encoding went (model/prompt_condition.h); empty otherwise.
  std::string text_encoder, text_encoder_hash;
  int64_t prompt_tokens = 0;
  bool prompt_truncated = false;
  double prompt_encode_ms = 0;

  // What the run did.
  std::string verify;  // the rule it used: greedy, coupled, sampled, deterministic, maximal
  int64_t budget = 0;  // a tree's verification budget N (0: not a tree)
  bool lantern = false;
  Acceptance relax = Acceptance::Lossless;
  bool lossless = true;  // the samples follow the target's distribution (or AR's tokens)
  bool device_step = false, fixed_shapes = false;
  int64_t graphs = 0;     // CUDA graphs replayed
  std::string ran_as_ar;  // why ADT-Tree's cost rule ran plain AR (run.h), empty when it did not
  double ar_estimate_ms = 0;  // plain AR's time on this device from its cost curve (0: unknown)

  Method method() const { return request.method.method; }
  nlohmann::json to_json() const;
  // Missing keys keep their defaults (files of older versions); a key of the wrong type is an
  // adtree::Error naming it.
  static RunSettings from_json(const nlohmann::json& j);
};

}  // namespace adtree::decode
