// Every kind of block the engine runs, through a model and its draft head: what the lean path's
// tests (test_lean_layer.cpp, test_lean_bf16.cpp) compare between paths.
#pragma once
#include <vector>

#include "model/llamagen/lean_layer.h"
#include "spec_fixture.h"

namespace adtree::testing {

struct LeanSwitch {  // restores the process switch whatever a test does
  bool was = model::lean_enabled();
  ~LeanSwitch() { model::set_lean_enabled(was); }
};

inline model::GptConfig wide_heads() {  // head_dim 64, as LlamaGen and the shipped model
  auto c = model::GptConfig::preset("micro");
  c.dim = 128, c.n_head = 2, c.vocab_size = 64, c.grid_h = c.grid_w = 8;
  c.validate();
  return c;
}

// Every block kind through a fresh cache, collecting (logits, hidden) of each forward.
inline std::vector<at::Tensor> run_blocks(const SpecFixture& f) {
  const model::Gpt& g = *f.target;
  auto cache = g.new_cache(2, 16);
  auto cond = f.cond({1, 5}, true);  // two words of four slots: padded condition keys
  std::vector<at::Tensor> outs;
  auto keep = [&](const model::Gpt::Output& o) {
    outs.push_back(o.logits.clone());
    outs.push_back(o.hidden.clone());
  };
  keep(g.prefill(cache, cond));
  auto tok = at::randint(g.config().vocab_size, {2, 3}, at::kLong);
  keep(g.forward_tokens(cache, tok.narrow(1, 0, 1), 0));
  cache.commit();
  keep(g.forward_tokens(cache, tok.narrow(1, 1, 2), 1));  // a causal two-token block
  cache.commit();
  // A tree block after two scratch rows: node i sees the scratch row 0 and its ancestors.
  const int64_t C = g.config().cond_tokens(), first = C + 3;
  auto scratch = g.embed_tokens(at::randint(g.config().vocab_size, {2, 2}, at::kLong));
  g.forward(scratch, at::arange(first, first + 2, at::kLong), &cache);
  auto mask = at::zeros({4, 6}, at::kBool);
  mask.select(1, 0).fill_(true);
  for (int64_t i = 0; i < 4; ++i) mask[i][2 + i] = true;
  mask[2][3] = mask[3][4] = mask[3][3] = true;  // 2 under 1, 3 under 2
  auto tree = g.embed_tokens(at::randint(g.config().vocab_size, {2, 4}, at::kLong));
  auto pos = at::tensor(std::vector<int64_t>{first, first + 1, first + 1, first + 2});
  keep(g.forward(tree, pos, &cache, mask, {}, 2));
  // The draft head on the committed features, then on its own cache's block.
  auto hcache = f.head->new_cache(2, 8);
  auto feats = at::randn({2, 3, g.config().dim});
  auto hout = f.head->forward(&hcache, feats, tok, at::arange(C, C + 3, at::kLong));
  outs.push_back(hout.logits.clone());
  outs.push_back(hout.hidden.clone());
  // No cache at all: the block attends within itself.
  keep(g.forward(tree, pos, nullptr));
  // Blocks of many queries (the packed attention): ten causal tokens, then a 12-node tree whose
  // node i hangs under node (i - 1) / 2, each seeing its ancestors.
  auto big = g.new_cache(2, 16);
  keep(g.prefill(big, cond));
  const auto many = at::randint(g.config().vocab_size, {2, 10}, at::kLong);
  keep(g.forward_tokens(big, many, 0));
  big.commit();
  auto tmask = at::zeros({12, 12}, at::kBool);
  std::vector<int64_t> tpos(12);
  for (int64_t i = 0; i < 12; ++i) {
    int64_t depth = 0;
    for (int64_t a = i; a >= 0; a = a == 0 ? -1 : (a - 1) / 2, ++depth) tmask[i][a] = true;
    tpos[size_t(i)] = C + 10 + depth - 1;
  }
  auto tnodes = g.embed_tokens(at::randint(g.config().vocab_size, {2, 12}, at::kLong));
  keep(g.forward(tnodes, at::tensor(tpos), &big, tmask));
  return outs;
}
}  // namespace adtree::testing
