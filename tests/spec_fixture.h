// Small models for the speculative-decoding tests: a target GPT, an EAGLE head, and helpers to run
// greedy AR and any draft-tree method on them.
#pragma once
#include <memory>

#include "decode/ar_sampler.h"
#include "decode/spec_decoder.h"
#include "decode/tree/draft_source.h"
#include "model/conditioning.h"
#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"

namespace adtree::testing {

inline model::TensorMap scaled_params(const std::vector<model::ParamSpec>& specs, uint64_t seed,
                                      double scale) {
  auto s = specs;
  for (auto& p : s) {
    if (p.init == model::Init::Normal) p.scale = scale;
  }
  return model::init_params(s, seed);
}

struct SpecFixture {
  model::GptConfig cfg;
  std::unique_ptr<model::Gpt> target;
  std::unique_ptr<model::Drafter> head;

  explicit SpecFixture(model::GptConfig c, uint64_t seed = 1, double scale = 0.3) : cfg(c) {
    target =
        std::make_unique<model::Gpt>(cfg, scaled_params(model::gpt_param_specs(cfg), seed, scale));
    head = std::make_unique<model::Drafter>(
        *target, scaled_params(model::drafter_param_specs(cfg), seed + 100, scale));
  }
  static model::GptConfig micro() { return model::GptConfig::preset("micro"); }

  model::Condition cond(const std::vector<int64_t>& words, bool cfg_on) const {
    return model::condition_from_words(*target, words, cfg_on);
  }
};

// A picture whose rows all repeat the first one (codes 0 .. w - 1): every cell from the second row
// on repeats the code above it, none the one to its left. The free candidates' tests read it.
inline std::vector<int64_t> striped_codes(int64_t cells, int64_t w) {
  std::vector<int64_t> t;
  for (int64_t c = 0; c < cells; ++c) t.push_back(c % w);
  return t;
}

}  // namespace adtree::testing
