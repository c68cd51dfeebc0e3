#include "model/llamagen/gpt_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_int.h"

namespace adtree::model {

std::string to_string(CondKind k) {
  return k == CondKind::Class ? "class" : "caption";
}

CondKind cond_kind_from_string(const std::string& s) {
  if (s == "class") return CondKind::Class;
  if (s == "caption") return CondKind::Caption;
  throw Error("unknown conditioning kind '" + s + "' (expected 'class' or 'caption')");
}

int64_t GptConfig::ffn_hidden() const {
  const int64_t h = (8 * dim) / 3;  // LLAMAGEN.md: int(8 * dim / 3), then round up
  return multiple_of * ((h + multiple_of - 1) / multiple_of);
}

void GptConfig::validate() const {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw Error("invalid GPT configuration: " + msg);
  };
  need(dim > 0 && n_layer > 0 && n_head > 0, "dim, n_layer and n_head must be positive");
  // Upper bounds far above any real model (LlamaGen 3B: dim 3200, 24 layers, vocab 16384, grid
  // 32); they keep every size derived below (FFN width, parameter shapes, sequence length) far
  // from int64 overflow whatever a model.json says (reliability.md, Fuzzing).
  auto at_most = [&](int64_t v, int64_t cap, const char* key) {
    need(v <= cap,
         std::string(key) + " (" + std::to_string(v) + ") is larger than " + std::to_string(cap));
  };
  at_most(dim, int64_t{1} << 16, "dim");
  at_most(n_layer, 1024, "n_layer");
  at_most(vocab_size, int64_t{1} << 24, "vocab_size");
  at_most(grid_h, 1024, "grid height");
  at_most(grid_w, 1024, "grid width");
  at_most(num_classes, int64_t{1} << 24, "num_classes");
  at_most(cap_dim, int64_t{1} << 16, "cap_dim");
  at_most(cond_len, int64_t{1} << 16, "cond_len");
  at_most(num_words, int64_t{1} << 24, "num_words");
  at_most(multiple_of, int64_t{1} << 16, "multiple_of");
  need(std::isfinite(norm_eps) && norm_eps > 0, "norm_eps must be a positive number");
  need(std::isfinite(rope_base) && rope_base > 0, "rope_base must be a positive number");
  need(dim % n_head == 0, "dim (" + std::to_string(dim) + ") must be divisible by n_head (" +
                              std::to_string(n_head) + ")");
  need(head_dim() % 4 == 0,
       "head_dim (" + std::to_string(head_dim()) + ") must be divisible by 4 for the 2-D RoPE");
  need(grid_h > 0 && grid_h == grid_w, "the token grid must be square (got " +
                                           std::to_string(grid_h) + "x" + std::to_string(grid_w) +
                                           ")");
  need(vocab_size > 1, "vocab_size must be at least 2");
  need(multiple_of > 0, "multiple_of must be positive");
  if (cond == CondKind::Class) {
    need(num_classes > 0, "num_classes must be positive for class conditioning");
  } else {
    need(cap_dim > 0 && cond_len > 0, "cap_dim and cond_len must be positive for captions");
    need(num_words >= 0, "num_words must not be negative");
  }
}

nlohmann::json GptConfig::to_json() const {
  nlohmann::json j{{"dim", dim},
                   {"n_layer", n_layer},
                   {"n_head", n_head},
                   {"vocab_size", vocab_size},
                   {"grid", {grid_h, grid_w}},
                   {"cond", to_string(cond)},
                   {"multiple_of", multiple_of},
                   {"norm_eps", norm_eps},
                   {"rope_base", rope_base}};
  if (cond == CondKind::Class) {
    j["num_classes"] = num_classes;
  } else {
    j["cap_dim"] = cap_dim;
    j["cond_len"] = cond_len;
    j["num_words"] = num_words;
  }
  return j;
}

GptConfig GptConfig::from_json(const nlohmann::json& j) {
  GptConfig c;
  try {
    if (!j.is_object()) throw Error("the gpt section must be a JSON object");
    c.dim = json_int(j, "dim", c.dim);
    c.n_layer = json_int(j, "n_layer", c.n_layer);
    c.n_head = json_int(j, "n_head", c.n_head);
    c.vocab_size = json_int(j, "vocab_size", c.vocab_size);
    if (j.contains("grid")) {
      c.grid_h = json_int(j.at("grid").at(0), "grid");
      c.grid_w = json_int(j.at("grid").at(1), "grid");
    }
    c.cond = cond_kind_from_string(j.value("cond", to_string(c.cond)));
    c.num_classes = json_int(j, "num_classes", c.num_classes);
    c.cap_dim = json_int(j, "cap_dim", c.cap_dim);
    c.cond_len = json_int(j, "cond_len", c.cond_len);
    c.num_words = json_int(j, "num_words", c.num_words);
    c.multiple_of = json_int(j, "multiple_of", c.multiple_of);
    c.norm_eps = j.value("norm_eps", c.norm_eps);
    c.rope_base = j.value("rope_base", c.rope_base);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid GPT configuration: ") + e.what());
  }
  c.validate();
  return c;
}

GptConfig GptConfig::preset(const std::string& name) {
  GptConfig c;
  auto llamagen = [&](int64_t layers, int64_t heads, int64_t dim) {
    c.n_layer = layers;
    c.n_head = heads;
    c.dim = dim;
    c.vocab_size = 16384;
    c.cond = CondKind::Class;
    c.num_classes = 1000;
  };
  if (name == "tiny") {
    c.dim = 256, c.n_layer = 8, c.n_head = 4, c.cond_len = 8, c.cap_dim = 64, c.num_words = 100;
  } else if (name == "small") {
    c.dim = 384, c.n_layer = 8, c.n_head = 6, c.cond_len = 8, c.cap_dim = 128, c.num_words = 400;
  } else if (name == "micro") {  // for fast unit tests
    c.dim = 64, c.n_layer = 2, c.n_head = 2, c.vocab_size = 32, c.grid_h = c.grid_w = 4;
    c.cond_len = 4, c.cap_dim = 16, c.num_words = 12, c.multiple_of = 32;
  } else if (name == "B") {
    llamagen(12, 12, 768);
  } else if (name == "L") {
    llamagen(24, 16, 1024);
  } else if (name == "XL") {
    llamagen(36, 20, 1280);
  } else {
    throw Error("unknown model size '" + name + "' (known: micro, tiny, small, B, L, XL)");
  }
  c.validate();
  return c;
}

}  // namespace adtree::model
