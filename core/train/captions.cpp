#include "train/captions.h"

#include <set>

#include "util/error.h"

namespace adtree::train {

model::Vocabulary build_vocabulary(const io::Dataset& data, const std::vector<int64_t>& rows) {
  std::set<std::string> words;
  for (int64_t r : rows) {
    for (auto& w : model::split_words(data.captions[size_t(r)])) words.insert(std::move(w));
  }
  if (words.empty()) throw Error("the training captions contain no words");
  return model::Vocabulary(model::Vocabulary::Kind::Words,
                           std::vector<std::string>(words.begin(), words.end()));
}

CaptionIds caption_ids(const io::Dataset& data, const model::Vocabulary& vocab, int64_t cond_len) {
  // Word -> id through the vocabulary's own lookup, one word at a time so unknown words can be
  // counted and skipped instead of failing the whole caption.
  std::map<std::string, int64_t> index;
  for (size_t i = 0; i < vocab.entries().size(); ++i) index.emplace(vocab.entries()[i], int64_t(i));
  CaptionIds out;
  const int64_t n = data.size();
  out.ids = at::full({n, cond_len}, -1, at::TensorOptions().dtype(at::kLong));
  auto acc = out.ids.accessor<int64_t, 2>();
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int64_t> ids;
    for (const auto& w : model::split_words(data.captions[size_t(r)])) {
      auto it = index.find(w);
      if (it == index.end()) {
        ++out.unknown_words;
      } else {
        ids.push_back(it->second);
      }
    }
    if (int64_t(ids.size()) > cond_len) {
      throw Error("caption '" + data.captions[size_t(r)] + "' has " + std::to_string(ids.size()) +
                  " words, more than the " + std::to_string(cond_len) +
                  " condition tokens (raise cond_len in --config)");
    }
    if (ids.empty()) ++out.empty_captions;
    // Left padding, as condition_from_words does at generation time.
    const int64_t pad = cond_len - int64_t(ids.size());
    for (size_t j = 0; j < ids.size(); ++j) acc[r][pad + int64_t(j)] = ids[j];
  }
  return out;
}

}  // namespace adtree::train
