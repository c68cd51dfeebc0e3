#include "train/word_vectors.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>  // strtof
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"

namespace adtree::train {

using json = nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw Error("word vectors " + path + ": " + problem);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void check_finite(const std::string& path, const std::string& word, const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) fail(path, "the vector of '" + word + "' has a non-finite number");
  }
}

// wink-embeddings: keep "dimensions" and the wanted entries of "vectors"; the 341k-word "words"
// list and every other vector are dropped while parsing, so memory stays proportional to `wanted`.
WordVectors read_wink_json(const std::string& path, std::istream& in,
                           const std::unordered_set<std::string>& wanted) {
  std::string section;  // the top-level key being parsed
  json root;
  try {
    root = json::parse(in, [&](int depth, json::parse_event_t event, json& parsed) {
      if (event != json::parse_event_t::key) return true;
      const auto& key = parsed.get_ref<const std::string&>();
      if (depth == 1) {
        section = key;
        return key == "dimensions" || key == "vectors";
      }
      return depth != 2 || section != "vectors" || wanted.count(key) > 0;
    });
  } catch (const json::exception& e) {
    fail(path, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (!root.is_object() || !root.contains("dimensions") || !root.contains("vectors") ||
      !root["dimensions"].is_number_integer() || !root["vectors"].is_object()) {
    fail(path,
         "is not a wink-embeddings file: it needs \"dimensions\" (an integer) and "
         "\"vectors\" (an object of word -> numbers)");
  }
  WordVectors wv;
  wv.dim = root["dimensions"].get<int64_t>();
  if (wv.dim <= 0 || wv.dim > 4096) fail(path, "\"dimensions\" must be in 1..4096");
  for (const auto& [word, arr] : root["vectors"].items()) {
    if (!arr.is_array() || int64_t(arr.size()) < wv.dim) {
      fail(path,
           "the vector of '" + word + "' has fewer than " + std::to_string(wv.dim) + " numbers");
    }
    std::vector<float> v(size_t(wv.dim));
    for (int64_t i = 0; i < wv.dim; ++i) {
      if (!arr[size_t(i)].is_number())
        fail(path, "the vector of '" + word + "' holds a non-number");
      v[size_t(i)] = arr[size_t(i)].get<float>();
    }
    check_finite(path, word, v);
    wv.vectors.emplace(word, std::move(v));
  }
  return wv;
}

// GloVe text: "word x1 ... xD" per line; D is fixed by the first line.
WordVectors read_glove_text(const std::string& path, std::istream& in,
                            const std::unordered_set<std::string>& wanted) {
  WordVectors wv;
  std::string line;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty()) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0) {
      fail(path, "line " + std::to_string(lineno) + " is not 'word x1 x2 ...'");
    }
    // Count the numbers of every line (cheap) so a ragged file is refused, not half-read.
    std::istringstream rest(line.substr(space + 1));
    std::vector<float> v;
    for (std::string tok; rest >> tok;) {
      char* end = nullptr;
      const float x = std::strtof(tok.c_str(), &end);
      if (end == tok.c_str() || *end != '\0') {
        fail(path, "line " + std::to_string(lineno) + " holds '" + tok + "', not a number");
      }
      v.push_back(x);
    }
    if (wv.dim == 0) wv.dim = int64_t(v.size());
    if (int64_t(v.size()) != wv.dim || wv.dim == 0) {
      fail(path, "line " + std::to_string(lineno) + " has " + std::to_string(v.size()) +
                     " numbers, the first line " + std::to_string(wv.dim));
    }
    const std::string word = line.substr(0, space);
    if (wanted.count(word)) {
      check_finite(path, word, v);
      wv.vectors.emplace(word, std::move(v));
    }
  }
  if (wv.dim == 0) fail(path, "holds no vectors");
  return wv;
}

}  // namespace

WordVectors load_word_vectors(const std::string& path,
                              const std::unordered_set<std::string>& wanted) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot be opened");
  return ends_with(path, ".json") ? read_wink_json(path, in, wanted)
                                  : read_glove_text(path, in, wanted);
}

int64_t init_word_table(at::Tensor& table, const std::vector<std::string>& words,
                        const WordVectors& wv) {
  if (table.dim() != 2 || table.size(0) != int64_t(words.size()) || table.size(1) != wv.dim) {
    throw Error("the word table is " + std::to_string(table.size(0)) + " x " +
                std::to_string(table.dim() == 2 ? table.size(1) : 0) + ", the word vectors need " +
                std::to_string(words.size()) + " x " + std::to_string(wv.dim));
  }
  std::vector<int64_t> rows;
  std::vector<float> flat;
  for (size_t i = 0; i < words.size(); ++i) {
    const auto it = wv.vectors.find(words[i]);
    if (it == wv.vectors.end()) continue;
    rows.push_back(int64_t(i));
    flat.insert(flat.end(), it->second.begin(), it->second.end());
  }
  if (rows.empty()) return 0;
  auto vecs = at::tensor(flat).reshape({int64_t(rows.size()), wv.dim});
  const double rms = vecs.pow(2).mean().sqrt().item<double>();
  if (rms > 0) vecs = vecs / rms;
  table.index_copy_(0, at::tensor(rows, at::TensorOptions().dtype(at::kLong)),
                    vecs.to(table.scalar_type()));
  return int64_t(rows.size());
}

}  // namespace adtree::train
