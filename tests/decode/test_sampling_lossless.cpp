// Sampling losslessness of the standard rules (SPEC_DECODING.md 4): on a tiny target (vocabulary
// 4, 2x2 grid) the exact distribution of the whole image (4 tokens, 256 outcomes) is enumerated
// from the target itself under the run's logits processing, and 20,000 speculative samples per rule
// must match it. The cases are made to exercise the rules, not only to pass:
//   - 3-level trees (the root's tree covers every later cell), budget 6;
//   - the draft is a perturbed copy of the target (correlated: q close to p, not an untrained
//   head);
//   - T = 0.8 with top-k 3, top-p 0.95 and a CFG interval (cond-only logits from cell 2 on);
//   - ADT-Tree with bounds d 1..3, k 1..3, so its shapes move during every run (asserted);
//   - the mean number of accepted drafts per image is pinned (measured on seeds 500000.., 100,000
//     images each, by the disabled PrintReferenceAcceptance below, 2026-12-01, the cost rule
//     2026-12-03; standard errors 0.0007-0.0018): within 5 standard errors of this run's mean, so
//     a rule that accepts too little or too much fails even if its samples stay exact.
// Power: outcomes with expected count < 5 are pooled; the test fails above the 1e-4 upper tail.
// A shift delta in one outcome of probability p adds about n delta^2 / p, i.e. 0.0025 absolute in a
// 1/64 outcome. Mutation shown below: a residual update that forgets the earlier rejected children
// fails it.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "decode/settings/method_table.h"
#include "decode/tree/parallel_source.h"
#include "decode/verify/verifier.h"
#include "exact_distribution.h"
#include "spec_fixture.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::chi2_quantile;
using adtree::testing::scaled_params;
using adtree::testing::tiny_config;

namespace {

constexpr int64_t kRuns = 20000, kV = 4, kTokens = 4;

// p(z0 .. z3) by enumeration through the target's KV cache.
void enumerate(const model::Gpt& gpt, model::KvCache& cache, const LogitsProcessor& proc,
               const at::Tensor& logits, int64_t index, double prob, int64_t code,
               std::vector<double>& joint) {
  auto p = proc.process(logits, index).probs[0].contiguous();
  const int64_t B = logits.size(0);
  for (int64_t a = 0; a < kV; ++a) {
    const double pa = prob * p[a].item<double>();
    if (index + 1 == kTokens) {
      joint[size_t(code * kV + a)] = pa;
      continue;
    }
    auto out = gpt.forward_tokens(cache, at::full({B, 1}, a, at::kLong), index);
    cache.commit();
    enumerate(gpt, cache, proc, out.logits, index + 1, pa, code * kV + a, joint);
    cache.truncate(cache.len - 1);
  }
}

// Chi-square with outcomes of expected count < 5 pooled into one bin; returns (chi2, dof).
std::pair<double, double> pooled_chi_square(const std::map<int64_t, int64_t>& counts,
                                            const std::vector<double>& p, int64_t n) {
  double chi2 = 0, pool_e = 0, pool_o = 0;
  int64_t bins = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * double(n);
    const double o = counts.count(int64_t(i)) ? double(counts.at(int64_t(i))) : 0.0;
    if (e < 5) {
      pool_e += e, pool_o += o;
      continue;
    }
    chi2 += (o - e) * (o - e) / e;
    ++bins;
  }
  if (pool_e > 0) chi2 += (pool_o - pool_e) * (pool_o - pool_e) / pool_e, ++bins;
  return {chi2, double(bins - 1)};
}

struct Tiny {
  model::GptConfig cfg = tiny_config();
  std::unique_ptr<model::Gpt> target, draft;
  std::unique_ptr<model::Drafter> head;
  std::unique_ptr<model::ParallelHead> parallel;  // random: every level in one call
  Tiny() {
    auto w = scaled_params(model::gpt_param_specs(cfg), 11, 0.15);
    target = std::make_unique<model::Gpt>(cfg, w);
    // The draft: the same weights, each perturbed by 30% of its own spread.
    at::manual_seed(5);
    auto dw = w;
    for (auto& [name, t] : dw) t = t + 0.3 * t.std().item<double>() * at::randn_like(t);
    draft = std::make_unique<model::Gpt>(cfg, dw);
    parallel = std::make_unique<model::ParallelHead>(
        *target, scaled_params(model::parallel_head_param_specs(cfg, 3), 12, 0.3), 3);
  }
};

struct Case {
  std::string method;
  VerifyRule rule;
  double pinned_accepted;  // mean accepted drafts per image (reference block, see header)
  bool cost = false;       // ADT's cost rule (flat curve: trees, grid candidates) over fixed N
  bool parallel = false;   // drafted by the parallel head
};

struct Outcome {
  double chi2 = 0, limit = 0, mean_accepted = 0, se = 0;
  int64_t distinct_widths = 0;  // tree widths k seen over all steps
};

DecodeRequest request_for(const Case& c) {
  DecodeRequest r;
  r.method.method = adtree::decode::method_from_string(c.method);
  r.method.verify = c.rule;
  r.method.dynamic_tree = {2, 3, 6};  // D 2 = 3 draft levels, K 3, N 6
  auto& a = r.method.adt;
  a.d_min = 1, a.d_max = 3, a.k_min = 1, a.k_max = 3, a.d0 = 2, a.k0 = 2;
  a.adjacency = Adjacency::Left;  // the source the pinned acceptance was measured with
  a.budget_rule = c.cost ? AdtBudget::Cost : AdtBudget::Fixed;
  r.sampling.cfg_scale = 2.0;
  r.sampling.cfg_interval = 1;  // cells 2 and 3 from the cond logits alone
  r.sampling.temperature = 0.8;
  r.sampling.top_k = 3;
  r.sampling.top_p = 0.95;
  return r;
}

Outcome sample(const Tiny& s, const Case& c, uint64_t first_seed, int64_t runs,
               Verifier* verifier = nullptr) {
  auto cond = model::condition_from_words(*s.target, {0, 2}, true);
  auto r = request_for(c);
  std::vector<double> joint(size_t(kV * kV * kV * kV), 0.0);
  {
    LogitsProcessor proc(r.sampling);
    auto cache = s.target->new_cache(2);
    auto pre = s.target->prefill(cache, cond);
    enumerate(*s.target, cache, proc, pre.logits, 0, 1.0, 0, joint);
  }
  double total = 0;
  for (double x : joint) total += x;
  EXPECT_NEAR(total, 1.0, 1e-4) << "the enumerated distribution does not sum to 1";
  auto src =
      c.parallel ? make_parallel_source(*s.parallel, *s.target, 2) : make_model_source(*s.draft, 2);
  SpecOptions o;
  o.budget = 6;
  o.verifier = verifier;
  std::map<int64_t, int64_t> counts;
  std::set<int64_t> widths;
  double sum = 0, sum2 = 0;
  for (int64_t i = 0; i < runs; ++i) {
    r.seed = first_seed + uint64_t(i);
    auto res = generate_speculative(*s.target, *src, cond, r, o);
    EXPECT_EQ(res.tokens.size(), size_t(kTokens));
    int64_t code = 0;
    for (auto t : res.tokens) code = code * kV + t;
    counts[code]++;
    double accepted = 0;
    for (const auto& st : res.stats.steps) {
      accepted += double(st.committed - 1 > 0 ? st.committed - 1 : 0);
      if (st.step > 0) widths.insert(st.tree_width);
    }
    // The prefill commits one token without a tree: subtract nothing, it has committed 1.
    sum += accepted, sum2 += accepted * accepted;
  }
  Outcome out;
  auto [chi2, dof] = pooled_chi_square(counts, joint, runs);
  out.chi2 = chi2;
  out.limit = chi2_quantile(dof, 3.72);  // upper 1e-4 tail
  out.mean_accepted = sum / double(runs);
  out.se = std::sqrt(std::max(0.0, sum2 / double(runs) - out.mean_accepted * out.mean_accepted) /
                     double(runs));
  out.distinct_widths = int64_t(widths.size());
  return out;
}

void check(const Case& c) {
  static const Tiny s;
  const auto o = sample(s, c, 1000, kRuns);
  std::cout << "[ " << c.method << " / " << to_string(c.rule) << " ] chi2 " << o.chi2 << " (limit "
            << o.limit << "), accepted drafts per image " << o.mean_accepted << " +- " << o.se
            << " (pinned " << c.pinned_accepted << "), widths " << o.distinct_widths << "\n";
  EXPECT_LT(o.chi2, o.limit) << c.method << " / " << to_string(c.rule)
                             << ": speculative samples differ from the exact distribution";
  EXPECT_NEAR(o.mean_accepted, c.pinned_accepted, 5 * o.se)
      << c.method << " / " << to_string(c.rule);
  if (c.method == "adt" && !c.cost) {
    EXPECT_EQ(o.distinct_widths, 3) << "ADT-Tree did not adapt its shape (k in 1..3)";
  }
}

// The recursive-rejection rule with one plausible wrong edit: after rejecting a child, the
// residual is rebuilt from the node's ORIGINAL p and q, forgetting earlier rejected children.
class ForgetfulVerifier : public Verifier {
 public:
  explicit ForgetfulVerifier(uint64_t seed) : rng_(seed) {}
  AcceptResult verify(const DraftTree& tree, const at::Tensor& p_all, const at::Tensor&, int64_t,
                      int64_t max_depth) override {
    auto P = p_all.to(at::kCPU, at::kFloat).contiguous();
    AcceptResult res;
    int64_t cur = 0;
    while (tree.nodes[size_t(cur)].depth < max_depth) {
      std::vector<double> p0(static_cast<size_t>(kV)), q0(static_cast<size_t>(kV), 0.0);
      for (int64_t i = 0; i < kV; ++i) p0[size_t(i)] = P[cur][i].item<double>();
      const auto& qd = tree.child_dist[size_t(cur)];
      for (int64_t i = 0; qd.defined() && i < kV; ++i) q0[size_t(i)] = qd[i].item<double>();
      std::vector<double> p = p0, q = q0;
      int64_t accepted = -1;
      for (int64_t c : tree.children(cur)) {
        const int64_t x = tree.nodes[size_t(c)].token;
        if (rng_.uniform() < std::min(1.0, p[size_t(x)] / q[size_t(x)])) {
          accepted = c;
          break;
        }
        p = p0, q = q0;  // the edit: start again from the node's p and q ...
        for (size_t i = 0; i < p.size(); ++i) p[i] = std::max(0.0, p[i] - q[i]);
        q[size_t(x)] = 0, p[size_t(x)] = 0;  // ... removing only this child
        double sp = 0, sq = 0;
        for (size_t i = 0; i < p.size(); ++i) sp += p[i], sq += q[i];
        if (sp <= 0) p = p0, sp = 1;
        for (size_t i = 0; i < p.size(); ++i) p[i] /= sp, q[i] = sq > 0 ? q[i] / sq : 0;
      }
      if (accepted < 0) {
        res.has_bonus = true;
        double u = rng_.uniform(), acc = 0;
        res.bonus = kV - 1;
        for (int64_t i = 0; i < kV; ++i) {
          if ((acc += p[size_t(i)]) > u) {
            res.bonus = i;
            break;
          }
        }
        return res;
      }
      res.path.push_back(accepted);
      cur = accepted;
    }
    return res;
  }

 private:
  Rng rng_;
};

}  // namespace

TEST(SamplingMatchesExactDistribution, DynamicTreeDeterministicChildren) {
  check({"dynamic", VerifyRule::Deterministic, 1.6055});
}
TEST(SamplingMatchesExactDistribution, DynamicTreeSampledChildren) {
  check({"dynamic", VerifyRule::Sampled, 1.8001});
}
TEST(SamplingMatchesExactDistribution, AdtTreeDeterministicChildren) {
  check({"adt", VerifyRule::Deterministic, 1.5499});
}
TEST(SamplingMatchesExactDistribution, AdtTreeSampledChildren) {
  check({"adt", VerifyRule::Sampled, 1.8252});
}
TEST(SamplingMatchesExactDistribution, StaticTreeSampledChildren) {
  check({"static", VerifyRule::Sampled, 1.9443});
}
TEST(SamplingMatchesExactDistribution, AdtTreeCoupled) {
  check({"adt", VerifyRule::Coupled, 1.8936});
}

// Cost-aware ADT-Tree (SPEC_DECODING.md 5.8) on the loop's default flat curve: its plans, free
// candidates inside the head's tree included, keep coupled samples exact.
TEST(SamplingMatchesExactDistribution, AdtCostRuleCoupled) {
  check({"adt", VerifyRule::Coupled, 1.8116, true});
}

// The parallel head gives every node of a level the same q whatever its parent: the rejection rules
// stay exact with it.
TEST(SamplingMatchesExactDistribution, ParallelHeadSampledChildren) {
  check({"dynamic", VerifyRule::Sampled, 1.4817, false, true});
}
TEST(SamplingMatchesExactDistribution, ParallelHeadAdtDeterministicChildren) {
  check({"adt", VerifyRule::Deterministic, 1.1864, false, true});
}

TEST(SamplingMatchesExactDistribution, ForgettingEarlierRejectedChildrenFails) {
  static const Tiny s;
  ForgetfulVerifier wrong(77);
  const auto o = sample(s, {"dynamic", VerifyRule::Sampled, 0}, 1000, kRuns, &wrong);
  std::cout << "[ mutation: forgetful residual ] chi2 " << o.chi2 << " (limit " << o.limit << ")\n";
  EXPECT_GT(o.chi2, o.limit) << "the test cannot tell a wrong residual update from the right one";
}

// Reference values for the pinned acceptance: a printing tool, not a test (disabled, so CTest
// lists it as such instead of counting a skip as a pass). Run it with
//   tests/test_sampling_lossless --gtest_also_run_disabled_tests --gtest_filter='*PrintReference*'
TEST(SamplingMatchesExactDistribution, DISABLED_PrintReferenceAcceptance) {
  static const Tiny s;
  for (const Case& c :
       {Case{"dynamic", VerifyRule::Deterministic, 0}, Case{"dynamic", VerifyRule::Sampled, 0},
        Case{"adt", VerifyRule::Deterministic, 0}, Case{"adt", VerifyRule::Sampled, 0},
        Case{"static", VerifyRule::Sampled, 0}, Case{"adt", VerifyRule::Coupled, 0},
        Case{"adt", VerifyRule::Coupled, 0, true}}) {
    const auto o = sample(s, c, 500000, 100000);
    std::cout << c.method << " / " << to_string(c.rule) << ": " << o.mean_accepted << " +- " << o.se
              << " (chi2 " << o.chi2 << " limit " << o.limit << ")\n";
  }
}
