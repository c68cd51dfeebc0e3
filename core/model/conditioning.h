// From what a user types to the GPT's Condition: prompt words -> word ids (t2i-words), class
// names or numbers -> class ids (c2i). Builds the CFG batch [cond; uncond].
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/llamagen/gpt.h"

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
  // A class given as a number ("207"), a full entry ("golden retriever"), any one of an entry's
  // comma-separated synonyms ("goldfish" for "goldfish, Carassius auratus") or a synonym with its
  // number ("crane (134)"); case-insensitive. A synonym shared by several classes is an error that
  // lists them.
  int64_t class_id(const std::string& text) const;
  // Entries starting with `prefix` (case-insensitive), for prompt completion. For classes: the
  // synonyms, with the class number added where a synonym names several classes.
  std::vector<std::string> complete(const std::string& prefix, size_t limit = 50) const;
  // Everything class_id accepts by name (each synonym as complete() writes it, and each full entry
  // that has several synonyms); empty for words. The front end's completion list.
  std::vector<std::string> class_prompts() const;

 private:
  Kind kind_ = Kind::Words;
  std::vector<std::string> entries_;
  std::map<std::string, int64_t> index_;
  // Classes: lower-case synonym -> (class id, synonym as written), in class order.
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> synonyms_;
};

// Lower case, words of letters/digits: the one normalisation shared by training and generation.
std::vector<std::string> split_words(const std::string& text);

// The condition for one prompt; with `cfg` a batch of 2: [cond; uncond] (null class / null caption
// with the cond's padding mask, as LlamaGen does).
Condition make_condition(const Gpt& gpt, const Vocabulary& vocab, const std::string& prompt,
                         bool cfg);
// Same from word ids (left-padded to cond_len; more words than cond_len is an error).
Condition condition_from_words(const Gpt& gpt, const std::vector<int64_t>& ids, bool cfg);

// `batch` rows of the null class or the null caption (all slots real): what the timings of a
// model's steps run on, whatever a prompt would be.
Condition null_condition(const Gpt& gpt, int64_t batch);

// A caption-embedding prompt file (t2i-embeddings models; tools/t5_embed.py writes one):
// safetensors with "caption_embedding" [L, cap_dim] (F32/F16/BF16, L <= cond_len) and optionally
// "caption_mask" [L] (integers or bools, 1 = a real token; absent = all real). As LlamaGen does,
// the real rows keep their order and move to the end of the cond_len slots (left padding), padded
// slots are zero vectors hidden from every query, and the null caption shares the mask. Throws
// adtree::Error naming the file and the problem.
Condition condition_from_embedding_file(const Gpt& gpt, const std::string& path, bool cfg);

// The same from caption rows in memory (a text encoder's output, model/text/text_encoder.h):
// embedding [L, cap_dim], valid [L] bool. `what` names the source in errors.
Condition condition_from_caption(const Gpt& gpt, const at::Tensor& embedding,
                                 const at::Tensor& valid, bool cfg, const std::string& what);

}  // namespace adtree::model
