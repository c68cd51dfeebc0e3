#include "model/text/text_encoder.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/file_hash.h"
#include "io/safetensors_shards.h"
#include "model/device.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::model {

namespace fs = std::filesystem;

namespace {

T5Config read_config(const std::string& path, std::vector<std::string>& problems) {
  std::ifstream in(path);
  if (!in) {
    problems.push_back(path + ": missing (the T5 directory's config.json)");
    return {};
  }
  try {
    return T5Config::from_hf_json(nlohmann::json::parse(in), path);
  } catch (const nlohmann::json::exception& e) {
    problems.push_back(path + ": not valid JSON (" + e.what() + ")");
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  return {};
}

// The encoder's tensors of a checkpoint that may hold the whole encoder-decoder: the decoder and
// the language-model head are never read (their pages are never touched). The embedding is
// "shared.weight", or the encoder's own copy of it when a checkpoint stores only that.
TensorMap encoder_tensors(const std::string& dir, std::vector<std::string>& problems) {
  const std::string base = dir + "/model.safetensors";
  if (io::safetensors_set_files(base).empty()) {
    problems.push_back(
        fs::exists(dir + "/pytorch_model.bin")
            ? base + ": missing; the directory has pytorch_model.bin only (convert it: " +
                  "adtree convert --t5 " + dir + ")"
            : base + ": missing (the T5 encoder's weights)");
    return {};
  }
  TensorMap all;
  try {
    all = io::map_safetensors_set(base);
  } catch (const Error& e) {
    problems.push_back(e.what());
    return {};
  }
  TensorMap enc;
  for (auto& [name, t] : all) {
    if (name.rfind("encoder.", 0) == 0 && name != "encoder.embed_tokens.weight") enc[name] = t;
  }
  if (all.count("shared.weight")) {
    enc["shared.weight"] = all.at("shared.weight");
  } else if (all.count("encoder.embed_tokens.weight")) {
    enc["shared.weight"] = all.at("encoder.embed_tokens.weight");
  }
  return enc;
}

std::vector<std::string> weight_files(const std::string& dir) {
  std::vector<std::string> files{dir + "/config.json", dir + "/spiece.model"};
  const auto set = io::safetensors_set_files(dir + "/model.safetensors");
  files.insert(files.end(), set.begin(), set.end());
  return files;
}

}  // namespace

std::shared_ptr<const TextEncoder> TextEncoder::load(const std::string& dir,
                                                     const TextEncoderOptions& opts) {
  if (!fs::is_directory(dir)) throw Error(dir + ": not a T5 directory (it does not exist)");
  const auto device = parse_device(opts.device);
  const auto dtype = parse_dtype(opts.dtype);
  std::vector<std::string> problems;
  const T5Config cfg = read_config(dir + "/config.json", problems);
  std::shared_ptr<const T5Tokenizer> tokenizer;
  try {
    tokenizer = std::make_shared<const T5Tokenizer>(dir + "/spiece.model");
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  auto weights = encoder_tensors(dir, problems);
  if (problems.empty()) {
    for (const auto& p : check_params(t5_encoder_param_specs(cfg), weights))
      problems.push_back(dir + "/model.safetensors: " + p);
  }
  if (tokenizer && problems.empty()) {
    if (tokenizer->piece_count() > cfg.vocab_size) {
      problems.push_back(dir + "/spiece.model: " + std::to_string(tokenizer->piece_count()) +
                         " pieces, more than the encoder's vocab_size " +
                         std::to_string(cfg.vocab_size));
    }
    if (tokenizer->eos_id() != cfg.eos_id) {
      problems.push_back(dir + "/spiece.model: </s> is id " + std::to_string(tokenizer->eos_id()) +
                         ", config.json says eos_token_id " + std::to_string(cfg.eos_id));
    }
  }
  if (!problems.empty()) {
    std::string msg =
        dir + ": the T5 directory has " + std::to_string(problems.size()) + " problem(s):";
    for (const auto& p : problems) msg += "\n  - " + p;
    throw Error(msg);
  }
  std::shared_ptr<TextEncoder> te(new TextEncoder());
  te->dir_ = dir;
  te->hash_ = io::sha256_files_cached(weight_files(dir));
  te->tokenizer_ = std::move(tokenizer);
  te->encoder_ = std::make_shared<const T5Encoder>(cfg, weights, device, dtype);
  return te;
}

EncodedCaption TextEncoder::encode(const std::string& prompt, int64_t max_length) const {
  const std::string key = std::to_string(max_length) + "\n" + prompt;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = memory_.begin(); it != memory_.end(); ++it) {
      if (it->first != key) continue;
      memory_.splice(memory_.begin(), memory_, it);
      EncodedCaption c = it->second;
      c.cached = true;
      c.ms = 0;
      return c;
    }
  }
  const auto t0 = Clock::now();
  const auto caption = tokenizer_->caption(prompt, max_length);
  const int64_t n = int64_t(caption.ids.size());
  const auto ids = at::tensor(caption.ids, at::kLong).view({1, n});
  EncodedCaption c;
  c.embedding = encoder_->encode(ids, at::ones({1, n}, at::kLong))[0];
  c.mask = at::ones({n}, at::kBool);
  c.ids = caption.ids;
  c.truncated = caption.truncated;
  c.pieces = caption.pieces;
  c.ms = ms_since(t0);
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.emplace_front(key, c);
  if (memory_.size() > kMemory) memory_.pop_back();
  return c;
}

}  // namespace adtree::model
