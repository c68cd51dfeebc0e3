#include "model/conditioning.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/file_write.h"
#include "io/safetensors.h"
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
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}
// "a, b, c" -> {"a", "b", "c"} (ImageNet names list synonyms this way).
std::vector<std::string> synonyms_of(const std::string& entry) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= entry.size()) {
    const size_t comma = entry.find(',', start);
    auto part =
        trim(entry.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!part.empty()) out.push_back(std::move(part));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}
// A whole string of decimal digits as a number (< 0 when it is not one).
long long parse_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  for (unsigned char ch : s) {
    if (!std::isdigit(ch)) return -1;
  }
  return std::stoll(s);
}
}  // namespace

Vocabulary::Vocabulary(Kind kind, std::vector<std::string> entries)
    : kind_(kind), entries_(std::move(entries)) {
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(lower(entries_[i]), int64_t(i));
  if (kind_ != Kind::Classes) return;
  for (size_t i = 0; i < entries_.size(); ++i) {
    for (const auto& syn : synonyms_of(entries_[i])) {
      auto& ids = synonyms_[lower(syn)];
      if (ids.empty() || ids.back().first != int64_t(i)) ids.emplace_back(int64_t(i), syn);
    }
  }
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

int64_t Vocabulary::class_id(const std::string& raw) const {
  const std::string text = trim(raw);
  const auto n = int64_t(entries_.size());
  const auto range = " (give a class name or a number 0.." + std::to_string(n - 1) + ")";
  if (const long long id = parse_index(text); id >= 0) {
    if (id < n) return id;
    throw Error("class number " + text + " is out of range" + range);
  }
  const std::string key = lower(text);
  // "name (N)": the number decides, the name must belong to it (a typo is not silently ignored).
  if (!key.empty() && key.back() == ')') {
    const auto open = key.rfind('(');
    const long long id = open == std::string::npos
                             ? -1
                             : parse_index(trim(key.substr(open + 1, key.size() - open - 2)));
    if (id >= 0) {
      const std::string name = trim(key.substr(0, open));
      if (id >= n) throw Error("class number " + std::to_string(id) + " is out of range" + range);
      auto it = synonyms_.find(name);
      const bool belongs =
          lower(entries_[size_t(id)]) == name ||
          (it != synonyms_.end() && std::any_of(it->second.begin(), it->second.end(),
                                                [&](const auto& p) { return p.first == id; }));
      if (!belongs) {
        throw Error("class " + std::to_string(id) + " is '" + entries_[size_t(id)] + "', not '" +
                    name + "'");
      }
      return id;
    }
  }
  // A name several classes share is ambiguous even where it is one class's whole entry
  // (ImageNet has two "crane"s, and "maillot" next to "maillot, tank suit").
  if (auto it = synonyms_.find(key); it != synonyms_.end()) {
    if (it->second.size() == 1) return it->second.front().first;
    std::string msg = "'" + text + "' names " + std::to_string(it->second.size()) + " classes: ";
    for (size_t i = 0; i < it->second.size(); ++i) {
      const auto id = it->second[i].first;
      msg += (i ? "; " : "") + std::to_string(id) + " (" + entries_[size_t(id)] + ")";
    }
    throw Error(msg + ". Give one as '" + it->second.front().second + " (" +
                std::to_string(it->second.front().first) + ")' or by number");
  }
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  std::string msg = "unknown class '" + text + "'" + range;
  const auto near = complete(text.substr(0, std::min<size_t>(text.size(), 3)), 5);
  if (!near.empty()) {
    msg += "; classes starting like it: ";
    for (size_t i = 0; i < near.size(); ++i) msg += (i ? ", " : "") + near[i];
  }
  throw Error(msg);
}

std::vector<std::string> Vocabulary::complete(const std::string& prefix, size_t limit) const {
  std::vector<std::string> out;
  const auto p = lower(prefix);
  if (kind_ == Kind::Classes) {
    for (auto it = synonyms_.lower_bound(p); it != synonyms_.end() && out.size() < limit; ++it) {
      if (it->first.compare(0, p.size(), p) != 0) break;
      for (const auto& [id, syn] : it->second) {
        if (out.size() >= limit) break;
        out.push_back(it->second.size() == 1 ? syn : syn + " (" + std::to_string(id) + ")");
      }
    }
    return out;
  }
  for (auto it = index_.lower_bound(p); it != index_.end() && out.size() < limit; ++it) {
    if (it->first.compare(0, p.size(), p) != 0) break;
    out.push_back(entries_[size_t(it->second)]);
  }
  return out;
}

std::vector<std::string> Vocabulary::class_prompts() const {
  std::vector<std::string> out;
  if (kind_ != Kind::Classes) return out;
  for (const auto& [key, ids] : synonyms_) {
    for (const auto& [id, syn] : ids) {
      out.push_back(ids.size() == 1 ? syn : syn + " (" + std::to_string(id) + ")");
    }
  }
  for (const auto& e : entries_) {
    if (e.find(',') != std::string::npos) out.push_back(e);
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
  if (c.num_words == 0) return condition_from_embedding_file(gpt, trim(prompt), cfg);
  return condition_from_words(gpt, vocab.encode_words(prompt), cfg);
}

Condition condition_from_embedding_file(const Gpt& gpt, const std::string& path, bool cfg) {
  const auto& c = gpt.config();
  if (c.cond != CondKind::Caption)
    throw Error("a caption-embedding file needs a text-to-image model");
  const std::string what = "caption-embedding file '" + path + "'";
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) {
    throw Error(
        "this model is prompted with a caption-embedding file (.safetensors with "
        "caption_embedding [L, " +
        std::to_string(c.cap_dim) +
        "] and caption_mask [L]; "
        "tools/t5_embed.py writes one): '" +
        path + "' is not a file");
  }
  io::SafetensorsReader file(path);
  const auto* emb_info = file.find("caption_embedding");
  if (!emb_info) throw Error(what + " has no tensor 'caption_embedding'");
  const auto& shape = emb_info->shape;
  if (shape.size() != 2 || shape[1] != c.cap_dim || shape[0] < 1 || shape[0] > c.cond_len) {
    throw Error(what + ": caption_embedding has shape " + shape_str(shape) + ", expected [L, " +
                std::to_string(c.cap_dim) + "] with 1 <= L <= " + std::to_string(c.cond_len));
  }
  const auto dt = emb_info->dtype;
  if (dt != io::DType::F32 && dt != io::DType::F16 && dt != io::DType::BF16) {
    throw Error(what + ": caption_embedding must be F32, F16 or BF16, not " + io::dtype_name(dt));
  }
  const int64_t L = shape[0];
  auto emb = file.tensor("caption_embedding").to(at::kFloat);
  at::Tensor valid = at::ones({L}, at::kBool);
  if (const auto* mask_info = file.find("caption_mask")) {
    if (mask_info->shape != std::vector<int64_t>{L}) {
      throw Error(what + ": caption_mask has shape " + shape_str(mask_info->shape) +
                  ", expected [" + std::to_string(L) + "]");
    }
    if (mask_info->dtype == io::DType::F32 || mask_info->dtype == io::DType::F16 ||
        mask_info->dtype == io::DType::BF16 || mask_info->dtype == io::DType::F64) {
      throw Error(what + ": caption_mask must hold integers or bools (1 = token, 0 = padding)");
    }
    auto m = file.tensor("caption_mask").to(at::kLong);
    if (m.lt(0).any().item<bool>() || m.gt(1).any().item<bool>()) {
      throw Error(what + ": caption_mask values must be 0 or 1");
    }
    valid = m.eq(1);
  }
  return condition_from_caption(gpt, emb, valid, cfg, what);
}

Condition condition_from_caption(const Gpt& gpt, const at::Tensor& embedding,
                                 const at::Tensor& valid, bool cfg, const std::string& what) {
  const auto& c = gpt.config();
  if (c.cond != CondKind::Caption) throw Error("a caption needs a text-to-image model");
  if (embedding.dim() != 2 || embedding.size(1) != c.cap_dim || embedding.size(0) < 1 ||
      embedding.size(0) > c.cond_len || valid.sizes() != at::IntArrayRef{embedding.size(0)}) {
    throw Error(what + ": caption rows of shape " + shape_str(embedding.sizes()) +
                ", expected [L, " + std::to_string(c.cap_dim) +
                "] with 1 <= L <= " + std::to_string(c.cond_len) + " and a mask [L]");
  }
  const auto emb = embedding.to(at::kCPU, at::kFloat);
  if (!at::isfinite(emb).all().item<bool>()) {
    throw Error(what + ": caption_embedding holds NaN or infinite values");
  }
  const auto rows = valid.to(at::kCPU, at::kBool).nonzero().view({-1});
  const int64_t n = rows.numel();
  if (n == 0) throw Error(what + ": caption_mask marks no token as real");
  // LlamaGen's left padding: the real rows, in order, end right before the first image token.
  auto caption = at::zeros({1, c.cond_len, c.cap_dim}, at::kFloat);
  caption[0].narrow(0, c.cond_len - n, n).copy_(emb.index_select(0, rows));
  auto mask = at::zeros({1, c.cond_len}, at::kBool);
  mask[0].narrow(0, c.cond_len - n, n).fill_(true);
  Condition cond;
  cond.caption = caption.to(gpt.device(), gpt.dtype());
  cond.caption_mask = mask.to(gpt.device());
  if (cfg) {
    cond.caption = at::cat({cond.caption, gpt.null_caption().unsqueeze(0)}, 0);
    cond.caption_mask = cond.caption_mask.repeat({2, 1});
  }
  return cond;
}

Condition null_condition(const Gpt& gpt, int64_t batch) {
  const auto& cfg = gpt.config();
  Condition cond;
  if (cfg.cond == CondKind::Class) {
    cond.class_ids = at::full({batch}, cfg.num_classes, at::kLong);
  } else {
    cond.caption = gpt.null_caption().unsqueeze(0).expand({batch, -1, -1});
    cond.caption_mask = at::ones({batch, cfg.cond_len}, at::kBool);
  }
  return cond;
}

}  // namespace adtree::model
