// PJD, Parallel Jacobi Decoding (SPEC_DECODING.md section 6.4). With one row at a time it is SJD
// row by row, so lossless: greedy and coupled identity with AR, and the exact distribution of a
// tiny target under its sampled rule. With several rows, the rules that make it lossy are pinned
// on hand-made rows (PjdState, no model): the row schedule, the row-causal mask, the follower rule
// (keep the accepted prefix, never a residual), and the leading row's residual.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "decode/jacobi/pjd.h"
#include "decode/jacobi/pjd_state.h"
#include "decode/run.h"
#include "exact_distribution.h"
#include "settings_error.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::chi2_quantile;
using adtree::testing::chi_square;
using adtree::testing::exact_joint;
using adtree::testing::SpecFixture;
using adtree::testing::tiny_config;
using adtree::testing::validation_error;

namespace {
DecodeRequest pjd_request(double temperature, uint64_t seed, int64_t rows) {
  DecodeRequest r;
  r.method.method = Method::Pjd;
  r.method.pjd.max_rows = rows;
  r.sampling.cfg_scale = 2.0;
  r.sampling.temperature = temperature;
  r.seed = seed;
  return r;
}

// Rows for a block: the oracle's one-hot at the cell each entry predicts (`oracle[cell]`), or the
// given row `row_p` for the entries of chain row `row`.
at::Tensor rows_for(const PjdBlock& b, const std::vector<int64_t>& oracle, int64_t V,
                    int64_t row = -1, const std::vector<float>& row_p = {}) {
  auto p = at::zeros({int64_t(b.entries.size()), V}, at::kFloat);
  for (size_t i = 0; i < b.entries.size(); ++i) {
    const auto& e = b.entries[i];
    if (e.predicts < 0) continue;
    if (e.row == row && !row_p.empty()) {
      for (int64_t t = 0; t < V; ++t) p[int64_t(i)][t] = row_p[size_t(t)];
    } else {
      p[int64_t(i)][oracle[size_t(e.predicts)]] = 1;
    }
  }
  return p;
}
}  // namespace

TEST(GreedyIdentity, PjdOneRowMatchesAr) {
  SpecFixture f(SpecFixture::micro());
  for (int64_t window : {1, 2, 3, 8}) {
    for (uint64_t seed : {0u, 3u}) {
      auto c = f.cond({1, 5}, true);
      auto r = pjd_request(0.0, seed, 1);
      r.method.pjd.window = window;
      auto ar = generate_ar(*f.target, c, r.sampling, seed);
      auto res = generate_pjd(*f.target, c, r);
      EXPECT_EQ(res.tokens, ar.tokens) << "window " << window;
      EXPECT_TRUE(res.stats.settings.lossless);
      EXPECT_EQ(res.stats.method, "pjd");
    }
  }
}

TEST(CoupledIdentity, PjdOneRowEqualsCoupledAr) {
  SpecFixture f(SpecFixture::micro());
  for (double t : {0.7, 1.0, 1.3}) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      auto c = f.cond({3}, true);
      auto r = pjd_request(t, seed, 1);
      r.method.verify = VerifyRule::Coupled;
      auto ar = generate_ar(*f.target, c, r.sampling, seed);
      EXPECT_EQ(generate_pjd(*f.target, c, r).tokens, ar.tokens) << "T " << t << " seed " << seed;
    }
  }
}

// One row at a time under the paper's sampled rule is SJD on each row: the first three tokens of a
// vocabulary-4, 2 x 2 target follow the exact joint (20,000 runs; limit: upper 1e-4 tail).
TEST(SamplingMatchesExactDistribution, PjdOneRowSampled) {
  SpecFixture f(tiny_config(), 11, 0.15);
  auto cond = f.cond({0, 2}, true);
  auto r = pjd_request(1.0, 0, 1);
  r.method.verify = VerifyRule::Sampled;
  r.method.pjd.window = 2;
  const auto joint = exact_joint(*f.target, cond, r.sampling);
  const int64_t n = 20000, V = 4;
  std::map<int64_t, int64_t> counts;
  int64_t drafts = 0;
  for (int64_t i = 0; i < n; ++i) {
    r.seed = uint64_t(i) + 7000;
    auto res = generate_pjd(*f.target, cond, r);
    ASSERT_EQ(res.tokens.size(), 4u);
    counts[(res.tokens[0] * V + res.tokens[1]) * V + res.tokens[2]]++;
    for (int64_t c = 0; c < 4; ++c) drafts += res.stats.grids.at(c).depth > 0 ? 1 : 0;
  }
  const double chi2 = chi_square(counts, joint, n), limit = chi2_quantile(63, 3.72);
  std::cout << "[ PJD one row ] chi2 = " << chi2 << " (limit " << limit << "), drafts accepted "
            << drafts << "\n";
  EXPECT_LT(chi2, limit);
  EXPECT_GT(drafts, n / 10) << "the row's draft must be tested and accepted";
}

// The schedule on an oracle whose rows are one-hot: a row starts once the row above has the
// offset's tokens, at most one per step and within max_rows; a follower never drafts past the
// column above its row's frontier; every cell is committed once, to the oracle's token.
TEST(PjdState, RowScheduleFollowsTheOffsetAndTheRowAbove) {
  const int64_t H = 4, W = 10, V = 5;
  std::vector<int64_t> oracle(size_t(H * W));
  for (int64_t c = 0; c < H * W; ++c) oracle[size_t(c)] = (c * 7 + 3) % V;
  for (int64_t max_rows : {0, 2}) {
    PjdSettings s;
    s.window = 4, s.row_offset = 3, s.max_rows = max_rows;
    PjdState st(s, H, W, V, VerifyRule::Sampled, nullptr);
    Rng rng(5);
    st.start(oracle[0]);
    std::set<int64_t> committed{0};
    int64_t steps = 0, most_rows = 0;
    while (!st.done() && steps < 200) {
      const auto before = st.active_rows();
      auto b = st.build(rng);
      for (const auto& ch : b.chains) {
        const int64_t k = st.row_tokens(ch.row);
        if (ch.leading) continue;
        EXPECT_LT(k, st.row_tokens(ch.row - 1));
        for (size_t j = 1; j < ch.entries.size(); ++j)  // drafts stay under the row above
          EXPECT_LT(b.entries[size_t(ch.entries[j])].cell % W, st.row_tokens(ch.row - 1));
      }
      const auto c = st.accept(b, rows_for(b, oracle, V), rng);
      for (size_t i = 0; i < c.cells.size(); ++i) {
        EXPECT_TRUE(committed.insert(c.cells[i]).second) << "cell " << c.cells[i] << " twice";
        EXPECT_EQ(c.tokens[i], oracle[size_t(c.cells[i])]);
      }
      EXPECT_LE(st.active_rows(), before + 1) << "two rows started in one step";
      if (max_rows) {
        EXPECT_LE(st.active_rows(), max_rows);
      }
      for (int64_t r = 1; r < H; ++r) {
        if (st.row_tokens(r) > 0 && st.row_tokens(r - 1) < W) {
          EXPECT_GE(st.row_tokens(r - 1), s.row_offset) << "row " << r << " started early";
        }
      }
      most_rows = std::max(most_rows, st.active_rows());
      ++steps;
    }
    EXPECT_TRUE(st.done());
    EXPECT_EQ(st.grid(), oracle);
    EXPECT_EQ(int64_t(st.cached_cells().size()), H * W - 1) << "every cell but the last cached";
    EXPECT_GE(most_rows, max_rows ? max_rows : 3) << "rows must run in parallel";
    // A one-hot oracle accepts every draft: far fewer steps than cells.
    EXPECT_LT(steps, H * W / 3);
  }
}

// The row-causal mask, read off one block with two active rows: a follower's draft sees the cached
// and committed cells before it in raster order and its own row's placeholder and earlier drafts,
// never the leading row's drafts; with the mask off it sees those too. The placeholder is private.
TEST(PjdState, RowCausalMaskHidesOtherRowsDrafts) {
  const int64_t H = 3, W = 8, V = 4;
  std::vector<int64_t> oracle(size_t(H * W), 1);
  for (bool row_mask : {true, false}) {
    PjdSettings s;
    s.window = 4, s.row_offset = 3, s.row_mask = row_mask;
    PjdState st(s, H, W, V, VerifyRule::Sampled, nullptr);
    Rng rng(1);
    st.start(1);
    while (st.active_rows() < 2) {
      auto b0 = st.build(rng);
      st.accept(b0, rows_for(b0, oracle, V), rng);
    }
    auto b = st.build(rng);
    const int64_t cached = int64_t(st.cached_cells().size());
    ASSERT_EQ(b.chains.size(), 2u);
    const auto& lead = b.chains[0];
    const auto& follow = b.chains[1];
    ASSERT_GE(follow.entries.size(), 2u);
    const int64_t fd = follow.entries.back();  // the follower's last draft
    const auto see = [&](int64_t q, int64_t key) { return b.mask[q][cached + key].item<bool>(); };
    for (size_t j = 1; j < lead.entries.size(); ++j)
      EXPECT_EQ(see(fd, lead.entries[j]), !row_mask) << "a leading row's draft";
    for (size_t j = 0; j + 1 < follow.entries.size(); ++j)
      EXPECT_TRUE(see(fd, follow.entries[j])) << "own row, earlier entry " << j;
    EXPECT_TRUE(see(fd, lead.entries[0])) << "the leading row's committed anchor";
    for (int64_t j = 0; j < cached; ++j) {
      EXPECT_EQ(b.mask[fd][j].item<bool>(),
                st.cached_cells()[size_t(j)] < b.entries[size_t(fd)].cell);
    }
    const int64_t anchor = follow.entries[0];
    if (b.entries[size_t(anchor)].kind == PjdEntryKind::Placeholder) {
      for (size_t j = 0; j < lead.entries.size(); ++j)
        EXPECT_FALSE(see(lead.entries[j], anchor)) << "the placeholder is the follower's own";
    }
  }
}

// The follower rule on a hand-made row p: its first draft x (a random code, a point mass) is kept
// with probability p(x); when it is not, the row commits nothing (no residual, no bonus).
// The leading row, given the same p, commits exactly p at its frontier whatever its draft (SJD).
TEST(PjdState, FollowerKeepsOnlyItsAcceptedPrefixAndTheLeaderIsExact) {
  const int64_t H = 2, W = 4, V = 4;
  const std::vector<float> P{0.1f, 0.2f, 0.3f, 0.4f};
  const std::vector<int64_t> zeros(size_t(H * W), 0);
  std::map<int64_t, std::pair<int64_t, int64_t>> by_token;  // draft -> (tried, kept)
  std::map<int64_t, int64_t> leader_first;
  const int64_t n = 20000;
  for (int64_t i = 0; i < n; ++i) {
    PjdSettings s;
    s.window = 3, s.row_offset = 2;
    PjdState st(s, H, W, V, VerifyRule::Sampled, nullptr);
    Rng rng(uint64_t(i) + 1);
    st.start(0);
    // Step 1: the leading row alone; its frontier row is P, so its first new cell is a sample of
    // P whatever the draft was.
    auto b1 = st.build(rng);
    auto c1 = st.accept(b1, rows_for(b1, zeros, V, 0, P), rng);
    ASSERT_FALSE(c1.cells.empty());
    ++leader_first[c1.tokens[0]];
    if (st.active_rows() < 2) continue;
    auto b2 = st.build(rng);
    const auto& follow = b2.chains[1];
    ASSERT_GE(follow.entries.size(), 2u);
    const int64_t x = b2.entries[size_t(follow.entries[1])].token;
    const int64_t before = st.row_tokens(1);
    auto c2 = st.accept(b2, rows_for(b2, zeros, V, 1, P), rng);
    int64_t follower_cells = 0;
    for (auto c : c2.cells) follower_cells += c / W == 1 ? 1 : 0;
    auto& [tried, kept] = by_token[x];
    ++tried;
    if (follower_cells > 0) {
      ++kept;
      EXPECT_EQ(
          c2.tokens[size_t(std::find(c2.cells.begin(), c2.cells.end(), W) - c2.cells.begin())], x);
    }
    EXPECT_EQ(st.row_tokens(1) - before, follower_cells);
    EXPECT_EQ(c2.relaxed, follower_cells);
  }
  std::vector<double> expect(P.begin(), P.end());
  EXPECT_LT(chi_square(leader_first, expect, n), chi2_quantile(3, 3.72));
  int64_t tried_all = 0;
  for (const auto& [x, tk] : by_token) {
    tried_all += tk.first;
    const double rate = double(tk.second) / double(tk.first);
    const double se = std::sqrt(P[size_t(x)] * (1 - P[size_t(x)]) / double(tk.first));
    EXPECT_NEAR(rate, P[size_t(x)], 5 * se + 1e-9) << "draft " << x;
  }
  EXPECT_GT(tried_all, n / 2) << "the follower must have been tested";
}

TEST(Statistics, PjdStepsListTheirCellsAndReadBack) {
  auto cfg = SpecFixture::micro();
  cfg.grid_h = cfg.grid_w = 8;  // rows long enough for a follower to commit before the leader ends
  SpecFixture f(cfg);
  auto c = f.cond({2}, true);
  // Greedy: the rows below re-guess the argmax of their rows, so they commit too.
  auto r = pjd_request(0.0, 2, 0);
  r.method.pjd.row_offset = 2, r.method.pjd.window = 3;
  std::vector<int64_t> streamed(size_t(f.cfg.image_tokens()), -1);
  auto res = generate_pjd(*f.target, c, r, [&](const StepEvent& ev) {
    for (size_t i = 0; i < ev.tokens.size(); ++i)
      streamed[size_t(ev.record.cell(i))] = ev.tokens[i];
  });
  EXPECT_EQ(streamed, res.tokens);
  EXPECT_EQ(res.stats.method, "pjd (lossy)");
  EXPECT_FALSE(res.stats.settings.lossless);
  EXPECT_TRUE(res.stats.grids.all_filled());
  bool several_rows = false;
  for (const auto& st : res.stats.steps) {
    std::set<int64_t> rows;
    for (auto cell : st.cells) rows.insert(cell / f.cfg.grid_w);
    several_rows = several_rows || rows.size() > 1;
  }
  EXPECT_TRUE(several_rows) << "no step committed on two rows";
  validate_run(res.stats, res.tokens);
  auto back = RunStats::from_json(res.stats.to_json());
  validate_run(back, res.tokens);
  EXPECT_EQ(back.steps.back().cells, res.stats.steps.back().cells);
  // A cell committed twice is refused.
  auto twice = res.stats;
  twice.steps.back().cells.front() = twice.steps[1].cell(0);
  EXPECT_THROW(validate_run(twice, res.tokens), Error);
  // Cancelled: the raster prefix of what was committed, which the run's steps cover.
  std::atomic<bool> cancel{false};
  int64_t seen = 0;
  auto cut = generate_pjd(
      *f.target, c, r,
      [&](const StepEvent&) {
        if (++seen == 3) cancel = true;
      },
      &cancel);
  EXPECT_TRUE(cut.cancelled);
  EXPECT_LT(cut.tokens.size(), res.tokens.size());
  validate_run(cut.stats, cut.tokens);
}

TEST(BadSettings, PjdSettingsAreClearErrors) {
  auto err = [](const MethodSettings& m) { return validation_error(m, 64, 16); };
  MethodSettings m;
  m.method = Method::Pjd;
  EXPECT_EQ(err(m), "");
  m.pjd.window = 0;
  EXPECT_NE(err(m).find("pjd.window (--pjd-window) must be in 1..64, got 0"), std::string::npos);
  m.pjd.window = 8, m.pjd.row_offset = 0;
  EXPECT_NE(err(m).find("pjd.row_offset (--pjd-row-offset) must be in 1.., got 0"),
            std::string::npos);
  m.pjd.row_offset = 8, m.pjd.max_rows = -1;
  EXPECT_NE(err(m).find("pjd.max_rows (--pjd-rows) must be in 0..64, got -1"), std::string::npos);
  m.pjd.max_rows = 0, m.verify = VerifyRule::Maximal;
  EXPECT_NE(err(m).find("not maximal"), std::string::npos);
  m.verify = VerifyRule::Auto, m.acceptance = Acceptance::Lantern;
  EXPECT_NE(err(m).find("LANTERN"), std::string::npos);
  m.acceptance = Acceptance::Lossless;
  m.pjd = PjdSettings{5, 3, 2, false, false};
  auto back = MethodSettings::from_json(m.to_json());
  EXPECT_EQ(back.pjd.window, 5);
  EXPECT_EQ(back.pjd.row_offset, 3);
  EXPECT_EQ(back.pjd.max_rows, 2);
  EXPECT_FALSE(back.pjd.row_mask);
  EXPECT_FALSE(back.pjd.spatial_init);
}
