// From what a user types to the GPT's Condition: prompt words -> word ids (t2i-words), class
// names or numbers -> class ids (c2i). Builds the CFG batch [cond; uncond].
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/gpt.h"

namespace adtree::model {

class Vocabulary {
 public:
  enum class Kind { Words, Classes };
  Vocabulary() = default;
  Vocabulary(Kind kind, std::vector<std::string> entries);
  static Vocabulary load(const std::string& path);  // text.json; throws adtree::Error
  void save(const std::string& path) const;
  nlohmann::json to_json() const;

  Kind kind() const { return kind_; }
  const std::vector<std::string>& entries() const { return entries_; }
  int64_t size() const { return int64_t(entries_.size()); }

  // Lower-cases and splits on anything but letters/digits; every word must be known, else an
  // adtree::Error lists all unknown words.
  std::vector<int64_t> encode_words(const std::string& prompt) const;
  // A class name (case-insensitive) or number.
  int64_t class_id(const std::string& text) const;
  // Entries starting with `prefix` (case-insensitive), for prompt completion.
  std::vector<std::string> complete(const std::string& prefix, size_t limit = 50) const;

 private:
  Kind kind_ = Kind::Words;
  std::vector<std::string> entries_;
  std::map<std::string, int64_t> index_;
};

// Lower case, words of letters/digits: the one normalisation shared by training and generation.
std::vector<std::string> split_words(const std::string& text);

// The condition for one prompt; with `cfg` a batch of 2: [cond; uncond] (null class / null caption
// with the cond's padding mask, as LlamaGen does).
Condition make_condition(const Gpt& gpt, const Vocabulary& vocab, const std::string& prompt,
                         bool cfg);
// Same from word ids (left-padded to cond_len; more words than cond_len is an error).
Condition condition_from_words(const Gpt& gpt, const std::vector<int64_t>& ids, bool cfg);

}  // namespace adtree::model
