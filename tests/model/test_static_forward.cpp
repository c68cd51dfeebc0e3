// The fixed-shape forward (static_forward.h) against Gpt::forward: the same logits, hidden rows and
// cache rows for one-token steps after a padded caption prefix, causal blocks and tree-masked
// blocks, step after step from the same block storage; and its misuse errors.
#include <gtest/gtest.h>

#include "model/gpu/static_forward.h"
#include "model/llamagen/gpt.h"
#include "reference_gpt.h"
#include "util/error.h"

using namespace adtree::model;
using adtree::testing::micro_config;

namespace {

TensorMap weights(const GptConfig& cfg) {
  auto specs = gpt_param_specs(cfg);
  for (auto& s : specs) {
    if (s.init == Init::Normal) s.scale = 0.2;
  }
  return init_params(specs, 3);
}

// A caption with two padded slots (hidden keys the static bias must keep hidden).
Condition padded(const Gpt& gpt) {
  const auto& c = gpt.config();
  std::vector<int64_t> ids(size_t(c.cond_len), 1);
  ids[0] = ids[1] = -1;
  auto word_ids = at::tensor(ids).unsqueeze(0);
  Condition cond;
  cond.caption = at::cat({gpt.caption_from_words(word_ids), gpt.null_caption().unsqueeze(0)});
  cond.caption_mask = word_ids.ge(0).repeat({2, 1});
  return cond;
}

void expect_close(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_LT((a - b).abs().max().item<double>(), 2e-5) << what;
}

}  // namespace

TEST(StaticForward, MatchesTheForwardStepAfterStep) {
  const auto cfg = micro_config();
  Gpt gpt(cfg, weights(cfg));
  const auto cond = padded(gpt);
  auto eager = gpt.new_cache(2, 16), fixed = gpt.new_cache(2, 16);
  gpt.prefill(eager, cond);
  gpt.prefill(fixed, cond);
  const int64_t C = cfg.cond_tokens();
  auto one = new_static_block(fixed, 1), four = new_static_block(fixed, 4);
  const void* storage = four.bias.data_ptr();
  // A tree of four nodes: root, two children, a grandchild under the second child.
  const auto tree = at::tensor(std::vector<uint8_t>{1, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1})
                        .view({4, 4})
                        .to(at::kBool);
  for (int64_t step = 0; step < 6; ++step) {
    const int64_t n = eager.len - C;  // image tokens so far
    const bool block = step % 2 == 1;
    const bool masked = step % 4 == 3;
    const int64_t q = block ? 4 : 1;
    auto toks = at::randint(cfg.vocab_size, {1, q}, at::kLong).repeat({2, 1});
    auto pos = at::arange(C + n, C + n + q, at::kLong);
    if (masked) pos = at::tensor(std::vector<int64_t>{C + n, C + n + 1, C + n + 1, C + n + 2});
    const auto mask = masked ? tree : at::Tensor();
    auto& b = block ? four : one;
    const auto want = gpt.forward(gpt.embed_tokens(toks), pos, &eager, mask);
    fill_static_block(b, fixed, gpt.rope(), toks, pos, mask);
    const auto got = gpt.forward_static(b, fixed);
    const std::string where = "step " + std::to_string(step);
    expect_close(got.logits, want.logits, where + " logits");
    expect_close(got.hidden, want.hidden, where + " hidden");
    EXPECT_EQ(fixed.pending, eager.pending) << where;
    for (size_t l = 0; l < eager.k.size(); ++l) {
      expect_close(fixed.k[l].narrow(2, 0, eager.len + q), eager.k[l].narrow(2, 0, eager.len + q),
                   where + " keys");
      expect_close(fixed.v[l].narrow(2, 0, eager.len + q), eager.v[l].narrow(2, 0, eager.len + q),
                   where + " values");
    }
    // Keep the root and the path through the second child (rows 0, 2, 3) of a tree block.
    const std::vector<int64_t> keep =
        masked ? std::vector<int64_t>{0, 2, 3} : std::vector<int64_t>{0};
    eager.keep(keep);
    fixed.keep(keep);
  }
  EXPECT_EQ(four.bias.data_ptr(), storage) << "the block's storage moved";
}

TEST(StaticForward, MisuseIsAClearError) {
  const auto cfg = micro_config();
  Gpt gpt(cfg, weights(cfg));
  auto cache = gpt.new_cache(2, 2);
  gpt.prefill(cache, padded(gpt));
  auto b = new_static_block(cache, 4);
  const auto toks = at::zeros({2, 4}, at::kLong);
  const auto pos = at::arange(cfg.cond_tokens(), cfg.cond_tokens() + 4, at::kLong);
  EXPECT_THROW(fill_static_block(b, cache, gpt.rope(), at::zeros({2, 3}, at::kLong), pos),
               adtree::Error);
  EXPECT_THROW(fill_static_block(b, cache, gpt.rope(), toks, pos, at::ones({3, 3}, at::kBool)),
               adtree::Error);
  EXPECT_THROW(fill_static_block(b, cache, gpt.rope(), toks, pos + 100000), adtree::Error);
  cache.len = cache.capacity() - 2;  // a full cache
  EXPECT_THROW(fill_static_block(b, cache, gpt.rope(), toks, pos), adtree::Error);
}
