#include "model/conditioning.h"

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/file_write.h"
#include "util/error.h"

namespace adtree::model {

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char ch : text) {
    if (std::isalnum(ch)) {
      cur.push_back(char(std::tolower(ch)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

namespace {
std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}
}  // namespace

Vocabulary::Vocabulary(Kind kind, std::vector<std::string> entries)
    : kind_(kind), entries_(std::move(entries)) {
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(lower(entries_[i]), int64_t(i));
}

Vocabulary Vocabulary::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the vocabulary file");
  try {
    auto j = nlohmann::json::parse(in);
    const auto kind = j.at("kind").get<std::string>();
    if (kind == "words")
      return Vocabulary(Kind::Words, j.at("words").get<std::vector<std::string>>());
    if (kind == "classes") {
      return Vocabulary(Kind::Classes, j.at("classes").get<std::vector<std::string>>());
    }
    throw Error(path + ": unknown vocabulary kind '" + kind + "' (expected words or classes)");
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": invalid vocabulary file: " + e.what());
  }
}

nlohmann::json Vocabulary::to_json() const {
  if (kind_ == Kind::Words) return {{"kind", "words"}, {"words", entries_}};
  return {{"kind", "classes"}, {"classes", entries_}};
}

void Vocabulary::save(const std::string& path) const {
  io::write_file(path, to_json().dump(1) + "\n", "the vocabulary file");
}

std::vector<int64_t> Vocabulary::encode_words(const std::string& prompt) const {
  std::vector<int64_t> ids;
  std::vector<std::string> unknown;
  for (const auto& w : split_words(prompt)) {
    auto it = index_.find(w);
    if (it == index_.end()) {
      unknown.push_back(w);
    } else {
      ids.push_back(it->second);
    }
  }
  if (!unknown.empty()) {
    std::string msg = "unknown prompt word(s): ";
    for (size_t i = 0; i < unknown.size(); ++i) msg += (i ? ", '" : "'") + unknown[i] + "'";
    throw Error(msg + " (the model knows " + std::to_string(entries_.size()) + " words)");
  }
  if (ids.empty()) throw Error("the prompt has no words");
  return ids;
}

int64_t Vocabulary::class_id(const std::string& text) const {
  auto it = index_.find(lower(text));
  if (it != index_.end()) return it->second;
  try {
    size_t used = 0;
    const long long id = std::stoll(text, &used);
    if (used == text.size() && id >= 0 && id < (long long)(entries_.size())) return id;
  } catch (const std::exception&) {
  }
  throw Error("unknown class '" + text + "' (give a class name or a number 0.." +
              std::to_string(entries_.size() - 1) + ")");
}

std::vector<std::string> Vocabulary::complete(const std::string& prefix, size_t limit) const {
  std::vector<std::string> out;
  const auto p = lower(prefix);
  for (auto it = index_.lower_bound(p); it != index_.end() && out.size() < limit; ++it) {
    if (it->first.compare(0, p.size(), p) != 0) break;
    out.push_back(entries_[size_t(it->second)]);
  }
  return out;
}

Condition condition_from_words(const Gpt& gpt, const std::vector<int64_t>& ids, bool cfg) {
  const auto& c = gpt.config();
  if (int64_t(ids.size()) > c.cond_len) {
    throw Error("the prompt has " + std::to_string(ids.size()) +
                " words; this model reads at most " + std::to_string(c.cond_len));
  }
  // Left padding, as LlamaGen's t2i captions: the words sit right before the first image token.
  std::vector<int64_t> padded(size_t(c.cond_len - int64_t(ids.size())), -1);
  padded.insert(padded.end(), ids.begin(), ids.end());
  auto word_ids = at::tensor(padded, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
  Condition cond;
  cond.caption = gpt.caption_from_words(word_ids);
  cond.caption_mask = word_ids.ge(0).to(gpt.device());
  if (cfg) {
    cond.caption = at::cat({cond.caption, gpt.null_caption().unsqueeze(0)}, 0);
    cond.caption_mask = cond.caption_mask.repeat({2, 1});
  }
  return cond;
}

Condition make_condition(const Gpt& gpt, const Vocabulary& vocab, const std::string& prompt,
                         bool cfg) {
  const auto& c = gpt.config();
  if (c.cond == CondKind::Class) {
    const int64_t id = vocab.kind() == Vocabulary::Kind::Classes ? vocab.class_id(prompt) : -1;
    if (id < 0 || id >= c.num_classes) throw Error("unknown class '" + prompt + "'");
    Condition cond;
    std::vector<int64_t> ids{id};
    if (cfg) ids.push_back(c.num_classes);  // the null class
    cond.class_ids = at::tensor(ids, at::TensorOptions().dtype(at::kLong));
    return cond;
  }
  if (c.num_words == 0) {
    throw Error("this model takes caption embeddings, not words: it cannot read a typed prompt");
  }
  return condition_from_words(gpt, vocab.encode_words(prompt), cfg);
}

}  // namespace adtree::model
