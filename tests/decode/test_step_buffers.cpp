// The verification forward's static inputs (step_buffers.h): a tree padded to its bucket verifies
// to the same tokens as unpadded, for every tree and Jacobi method and rule; the buffers keep their
// storage from step to step; the padding nodes see only themselves and no real node sees them.
#include <gtest/gtest.h>

#include "decode/device/step_buffers.h"
#include "decode/settings/method_table.h"
#include "spec_fixture.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::SpecFixture;

TEST(StepBuffers, BucketsAndPaddingMask) {
  EXPECT_EQ(StepBuffers::bucket(1), 1);
  EXPECT_EQ(StepBuffers::bucket(2), 8);
  EXPECT_EQ(StepBuffers::bucket(9), 16);
  EXPECT_EQ(StepBuffers::bucket(59), 64);
  EXPECT_EQ(StepBuffers::bucket(65), 128);
  DraftTree t;  // root, two children, one grandchild under the second
  t.nodes = {DraftNode{5, -1, 0}, DraftNode{6, 0, 1}, DraftNode{7, 0, 1}, DraftNode{8, 2, 2}};
  t.child_dist.resize(4);
  StepBuffers b(at::kCPU, 2, /*pad=*/true);
  const auto in = b.fill(t, 100);
  ASSERT_EQ(in.mask.size(0), 8);
  EXPECT_EQ(in.real, 4);
  EXPECT_TRUE(at::equal(in.mask.narrow(0, 0, 4).narrow(1, 0, 4), t.ancestor_mask()));
  EXPECT_FALSE(in.mask.narrow(0, 0, 4).narrow(1, 4, 4).any().item<bool>())
      << "a real node sees padding";
  EXPECT_TRUE(at::equal(in.mask.narrow(0, 4, 4).narrow(1, 4, 4), at::eye(4, at::kBool)));
  EXPECT_FALSE(in.mask.narrow(0, 4, 4).narrow(1, 0, 4).any().item<bool>());
  EXPECT_EQ(in.positions[3].item<int64_t>(), 102);
  EXPECT_EQ(in.positions[7].item<int64_t>(), 100);
  EXPECT_EQ(in.tokens.sizes(), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(in.tokens[1][3].item<int64_t>(), 8);
  // Another tree of the same bucket: the same storage, refilled.
  DraftTree u;
  u.nodes = {DraftNode{1, -1, 0}, DraftNode{2, 0, 1}};
  u.child_dist.resize(2);
  const auto again = b.fill(u, 50);
  EXPECT_EQ(again.tokens.data_ptr(), in.tokens.data_ptr());
  EXPECT_EQ(again.positions.data_ptr(), in.positions.data_ptr());
  EXPECT_EQ(again.mask.data_ptr(), in.mask.data_ptr());
  EXPECT_EQ(again.tokens[0][1].item<int64_t>(), 2);
  EXPECT_FALSE(again.mask[1][3].item<bool>()) << "the last tree's rows are gone";
}

TEST(StepBuffers, PaddedVerificationCommitsTheSameTokens) {
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({1, 5}, true);
  for (const char* method : {"static", "dynamic", "adt", "sjd", "pathspec", "sjd-pac"}) {
    for (double temperature : {0.0, 1.0}) {
      for (auto rule : {VerifyRule::Coupled, VerifyRule::Sampled}) {
        DecodeRequest r;
        r.method.method = method_from_string(method);
        r.method.dynamic_tree.budget = 12;
        r.method.verify = rule;
        r.sampling.temperature = temperature;
        r.seed = 4;
        auto run = [&](bool pad) {
          SpecOptions o;
          o.budget = 12;
          o.pad_to_buckets = pad;
          if (is_jacobi(r.method.method)) return generate_jacobi(*f.target, c, r, o);
          auto src = make_eagle_source(*f.head, *f.target, 2);
          return generate_speculative(*f.target, *src, c, r, o);
        };
        const auto plain = run(false), padded = run(true);
        EXPECT_EQ(padded.tokens, plain.tokens)
            << method << " T " << temperature << " " << to_string(rule);
        EXPECT_EQ(padded.stats.summary.target_forwards, plain.stats.summary.target_forwards);
      }
    }
  }
}
