// The device step (device_tree.h, device_verify.h): the dynamic tree built on the model's device is
// the host builder's tree; whole generations commit the host step's tokens (and so AR's, greedy
// and coupled) step by step; a step reads the host exactly once; the settings it does not cover
// are refused when it is asked for, and left to the host step by default.
#include <gtest/gtest.h>

#include "decode/device/device_verify.h"
#include "decode/device/step_buffers.h"
#include "decode/settings/method_table.h"
#include "decode/tree/tree_builder.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::SpecFixture;

namespace {

DecodeRequest request(const char* method, double temperature, bool filters, uint64_t seed) {
  DecodeRequest r;
  r.method.method = method_from_string(method);
  r.method.dynamic_tree.budget = 14;
  r.method.adt.d_max = 6;
  // The device step builds the adjacency shape with N (what a flat cost curve chooses); the host
  // step is compared with it under the same rule.
  r.method.adt.budget_rule = AdtBudget::Fixed;
  r.sampling.cfg_scale = 2.0;
  r.sampling.temperature = temperature;
  if (filters) r.sampling.top_k = 3, r.sampling.top_p = 0.9;
  r.seed = seed;
  return r;
}

DecodeResult run(const SpecFixture& f, const model::Condition& c, const DecodeRequest& r,
                 DeviceStep mode, bool oracle = false, bool pad = false,
                 const StepCallback& on_step = {}, bool fixed = false) {
  SpecOptions o;
  o.budget = r.method.dynamic_tree.budget;
  o.pad_to_buckets = pad;
  o.fixed_shapes = fixed;
  auto src = oracle ? make_model_source(*f.target, 2) : make_eagle_source(*f.head, *f.target, 2);
  auto req = r;
  req.method.device_step = mode;
  return generate_speculative(*f.target, *src, c, req, o, on_step);
}

// The host builder's tree and the device builder's, read back, for one root.
struct TwoTrees {
  DraftTree host, device;
};
TwoTrees build_both(const SpecFixture& f, const model::Condition& c, VerifyRule rule,
                    const SamplingParams& sp, int64_t levels, int64_t width, int64_t budget) {
  auto src = make_eagle_source(*f.head, *f.target, 2);
  auto cache = f.target->new_cache(2);
  const auto pre = f.target->prefill(cache, c);
  const auto feat = pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1);
  src->start(c, feat);
  LogitsProcessor proc(sp);
  CouplingNoise noise(9, f.cfg.vocab_size);
  TwoTrees out;
  {
    auto logits = src->begin_step({3}, feat, 0);
    ChildPicker picker{rule, &noise, nullptr};
    DraftContext ctx{*src, proc, picker, logits, 3, 0, 20};
    out.host = build_dynamic_tree(ctx, levels, width, budget);
    src->end_step();
  }
  auto logits = src->begin_step({3}, feat, 0);
  DeviceDraftContext ctx{*src, proc, rule, &noise, logits, 3, 0, 20};
  const auto tree = build_dynamic_tree_on_device(ctx, levels, width, budget);
  src->end_step();
  Processed rows;  // any distribution: only the tree is compared here
  rows.probs = at::full({tree.size, f.cfg.vocab_size}, 1.0 / double(f.cfg.vocab_size));
  rows.top1 = rows.probs.select(1, 0);
  out.device = verify_on_device(tree, rows, rule != VerifyRule::Coupled, 100).tree;
  return out;
}

}  // namespace

TEST(DeviceTree, IsTheHostBuildersTree) {
  SpecFixture f(SpecFixture::micro());
  const auto c = f.cond({1, 5}, true);
  int64_t dropped = 0;
  for (auto rule : {VerifyRule::Deterministic, VerifyRule::Coupled}) {
    for (bool filters : {false, true}) {
      SamplingParams sp;
      sp.cfg_scale = 2.0;
      if (filters) sp.top_k = 3;  // children beyond the third have no mass: invalid nodes
      for (auto [levels, width, budget] :
           std::vector<std::array<int64_t, 3>>{{4, 3, 0}, {6, 4, 10}, {5, 5, 30}, {3, 8, 1}}) {
        const auto t = build_both(f, c, rule, sp, levels, width, budget);
        const std::string where = to_string(rule) + (filters ? " top-k 3" : "") + " d " +
                                  std::to_string(levels) + " k " + std::to_string(width) + " N " +
                                  std::to_string(budget);
        ASSERT_EQ(t.device.size(), t.host.size()) << where;
        EXPECT_EQ(t.device.levels, t.host.levels) << where;
        EXPECT_EQ(t.device.width, t.host.width) << where;
        for (int64_t i = 0; i < t.host.size(); ++i) {
          const auto &h = t.host.nodes[size_t(i)], &d = t.device.nodes[size_t(i)];
          EXPECT_EQ(d.token, h.token) << where << " node " << i;
          EXPECT_EQ(d.parent, h.parent) << where << " node " << i;
          EXPECT_EQ(d.depth, h.depth) << where << " node " << i;
          EXPECT_EQ(d.rank, h.rank) << where << " node " << i;
          EXPECT_FLOAT_EQ(d.q, h.q) << where << " node " << i;
          EXPECT_NEAR(d.score, h.score, 1e-9) << where << " node " << i;
        }
        if (filters) dropped += int64_t(width > 3);
      }
    }
  }
  EXPECT_GT(dropped, 0) << "no tree had children without mass";
}

TEST(DeviceStep, CommitsTheHostStepsTokensStepByStep) {
  SpecFixture f(SpecFixture::micro());
  for (const char* method : {"dynamic", "adt"}) {
    for (double temperature : {0.0, 1.0}) {  // greedy, then shared-noise verification
      for (bool filters : {false, true}) {
        for (bool oracle : {false, true}) {
          const auto c = f.cond({2, 7}, true);
          const auto r = request(method, temperature, filters, 3);
          const auto host = run(f, c, r, DeviceStep::Off, oracle);
          const auto dev = run(f, c, r, DeviceStep::On, oracle, /*pad=*/oracle);
          // The verification through fixed-shape blocks (eager here; graphs on a GPU).
          const auto fixed = run(f, c, r, DeviceStep::On, oracle, false, {}, /*fixed=*/true);
          const auto ar = generate_ar(*f.target, c, r.sampling, r.seed);
          const std::string where = std::string(method) + " T " + std::to_string(temperature) +
                                    (filters ? " filters" : "") + (oracle ? " oracle" : "");
          ASSERT_EQ(dev.tokens, ar.tokens) << where;
          ASSERT_EQ(dev.tokens, host.tokens) << where;
          ASSERT_EQ(fixed.tokens, host.tokens) << where << " (fixed shapes)";
          EXPECT_TRUE(fixed.stats.settings.fixed_shapes);
          EXPECT_FALSE(dev.stats.settings.fixed_shapes);
          EXPECT_TRUE(dev.stats.settings.device_step);
          EXPECT_FALSE(host.stats.settings.device_step);
          // The same trees and verdicts step by step (the tokens alone would not show a worse
          // draft: every lossless run commits AR's tokens).
          for (const auto* run : {&dev, &fixed}) {
            ASSERT_EQ(run->stats.steps.size(), host.stats.steps.size()) << where;
            for (size_t i = 0; i < host.stats.steps.size(); ++i) {
              const auto &h = host.stats.steps[i], &d = run->stats.steps[i];
              EXPECT_EQ(d.committed, h.committed) << where << " step " << i;
              EXPECT_EQ(d.drafted, h.drafted) << where << " step " << i;
              EXPECT_EQ(d.tree_depth, h.tree_depth) << where << " step " << i;
              EXPECT_EQ(d.budget, h.budget) << where << " step " << i;
            }
          }
          for (int64_t cell = 0; cell < f.cfg.image_tokens(); ++cell) {
            EXPECT_EQ(dev.stats.grids.at(cell).depth, host.stats.grids.at(cell).depth);
            EXPECT_NEAR(dev.stats.grids.at(cell).top1, host.stats.grids.at(cell).top1, 1e-5);
          }
          if (oracle) {
            EXPECT_GT(dev.stats.summary.tau, 2.0) << where << ": the oracle's drafts were refused";
          }
        }
      }
    }
  }
}

TEST(DeviceStep, ReadsTheHostOncePerStep) {
  SpecFixture f(SpecFixture::micro());
  const auto c = f.cond({4}, true);
  std::vector<int64_t> reads;
  auto count = [&](const StepEvent&) { reads.push_back(device_step_reads()); };
  const auto res = run(f, c, request("adt", 1.0, false, 5), DeviceStep::On, true, false, count);
  ASSERT_GT(reads.size(), 3u);
  // The first event is the prefill's; every verified step after it reads exactly once.
  for (size_t i = 1; i < reads.size(); ++i) EXPECT_EQ(reads[i] - reads[i - 1], 1) << "step " << i;
  const auto host_reads = device_step_reads();
  run(f, c, request("adt", 1.0, false, 5), DeviceStep::Off, true);
  EXPECT_EQ(device_step_reads(), host_reads) << "the host step counts as a device read";
}

TEST(DeviceStep, BuffersKeepTheirStorageAndPaddingSeesOnlyItself) {
  SpecFixture f(SpecFixture::micro());
  const auto c = f.cond({1}, true);
  auto src = make_eagle_source(*f.head, *f.target, 2);
  auto cache = f.target->new_cache(2);
  const auto pre = f.target->prefill(cache, c);
  src->start(c, pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1));
  LogitsProcessor proc(SamplingParams{});
  CouplingNoise noise(1, f.cfg.vocab_size);
  StepBuffers buffers(at::kCPU, 2, /*pad=*/true);
  void* storage = nullptr;
  for (int64_t budget : {9, 12}) {  // two trees of the 16-row bucket
    auto logits = src->begin_step({3}, pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1), 0);
    DeviceDraftContext ctx{*src, proc, VerifyRule::Coupled, &noise, logits, 3, 0, 20};
    const auto tree = build_dynamic_tree_on_device(ctx, 4, 3, budget);
    src->end_step();
    const auto in = buffers.fill(tree, 40);
    ASSERT_EQ(in.tokens.size(1), 16);
    EXPECT_EQ(in.real, budget + 1);
    if (storage) {
      EXPECT_EQ(in.mask.data_ptr(), storage) << "the buffers moved";
    }
    storage = in.mask.data_ptr();
    const int64_t n = in.real, pad = 16 - n;
    EXPECT_TRUE(at::equal(in.mask.narrow(0, 0, n).narrow(1, 0, n), tree.ancestors));
    EXPECT_FALSE(in.mask.narrow(0, 0, n).narrow(1, n, pad).any().item<bool>());
    EXPECT_TRUE(at::equal(in.mask.narrow(0, n, pad).narrow(1, n, pad), at::eye(pad, at::kBool)));
    EXPECT_TRUE(at::equal(in.positions.narrow(0, 0, n), tree.depths + 40));
    EXPECT_TRUE(at::equal(in.tokens[1].narrow(0, 0, n), tree.tokens));
  }
}

TEST(DeviceStep, AskedForSettingsItDoesNotCoverIsAClearError) {
  SpecFixture f(SpecFixture::micro());
  const auto c = f.cond({1}, true);
  auto expect_refused = [&](DecodeRequest r, const std::string& what) {
    try {
      run(f, c, r, DeviceStep::On);
      ADD_FAILURE() << what << " ran on the device";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--device-step off"), std::string::npos) << e.what();
    }
    // Auto leaves them to the host step.
    EXPECT_FALSE(run(f, c, r, DeviceStep::Auto).stats.settings.device_step) << what;
  };
  auto r = request("dynamic", 1.0, false, 1);
  r.method.verify = VerifyRule::Sampled;
  expect_refused(r, "q-sampling");
  r = request("static", 0.0, false, 1);
  expect_refused(r, "a static tree");
  r = request("adt", 1.0, false, 1);
  r.method.adt.adjacency = Adjacency::Confidence;
  expect_refused(r, "the confidence-only baseline");
  r = request("adt", 1.0, false, 1);
  r.trace.enabled = true;
  expect_refused(r, "a traced run");
  EXPECT_THROW(device_step_from_string("gpu"), Error);
  EXPECT_EQ(device_step_from_string("off"), DeviceStep::Off);
}

TEST(DeviceStep, PositionRangeThatDoesNotHoldIsCaught) {
  SpecFixture f(SpecFixture::micro());
  auto cache = f.target->new_cache(1);
  const auto x = f.target->embed_tokens(at::zeros({1, 2}, at::kLong));
  const auto pos = at::tensor(std::vector<int64_t>{10, 12}, at::kLong);
  EXPECT_NO_THROW(f.target->forward(x, pos, &cache, {}, {}, 0, model::PositionBounds{10, 12}));
  cache.pending = 0;
  EXPECT_THROW(f.target->forward(x, pos, &cache, {}, {}, 0, model::PositionBounds{10, 11}), Error);
  EXPECT_THROW(f.target->forward(x, pos, &cache, {}, {}, 0, model::PositionBounds{10, 100000}),
               Error)
      << "a range past the sequence must be refused";
}

TEST(FixedShapes, ArStepsCommitTheSameTokens) {
  SpecFixture f(SpecFixture::micro());
  for (double temperature : {0.0, 1.0}) {
    for (bool cfg : {false, true}) {
      const auto c = f.cond({3, 1}, cfg);
      auto r = request("ar", temperature, temperature > 0, 6);
      r.sampling.cfg_scale = cfg ? 2.0 : 1.0;
      const auto plain = generate_ar(*f.target, c, r.sampling, r.seed);
      const auto fixed = generate_ar(*f.target, c, r.sampling, r.seed, {}, nullptr, {}, true);
      EXPECT_EQ(fixed.tokens, plain.tokens) << "T " << temperature << " cfg " << cfg;
      EXPECT_TRUE(fixed.stats.settings.fixed_shapes);
      EXPECT_FALSE(plain.stats.settings.fixed_shapes);
      for (int64_t cell = 0; cell < f.cfg.image_tokens(); ++cell) {
        EXPECT_NEAR(fixed.stats.grids.at(cell).top1, plain.stats.grids.at(cell).top1, 1e-5);
      }
    }
  }
}
