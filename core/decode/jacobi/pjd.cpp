#include "decode/jacobi/pjd.h"

#include <c10/core/InferenceMode.h>

#include <chrono>

#include "decode/jacobi/pjd_state.h"
#include "decode/settings/method_table.h"
#include "decode/stats/step_recorder.h"
#include "decode/verify/coupling.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

at::Tensor long_tensor(const std::vector<int64_t>& v) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong));
}

void describe_run(RunStats& stats, const model::GptConfig& cfg, const DecodeRequest& r,
                  VerifyRule rule) {
  const bool lossless = is_lossless(r);  // the method's row: one row at a time
  stats.method = std::string("pjd") + (lossless ? "" : " (lossy)");
  stats.settings.request = r;
  stats.settings.verify = r.sampling.greedy() ? "greedy" : to_string(rule);
  stats.settings.lossless = lossless;
  stats.grids = CellGrids(cfg.grid_h, cfg.grid_w);
}

// The per-cell statistics of a step's commits: the chain position, the step's tokens, the row's
// window as the "tree" depth and the active rows as its width.
std::vector<CellStats> cell_stats(const PjdCommit& c, const at::Tensor& top1, int64_t window,
                                  int64_t rows) {
  std::vector<CellStats> out;
  const float* t = top1.data_ptr<float>();
  for (size_t i = 0; i < c.cells.size(); ++i) {
    CellStats s;
    s.depth = c.depth[i];
    s.top1 = t[c.row_of[i]];
    s.accept_len = int32_t(c.cells.size());
    s.tree_depth = s.plan_depth = int32_t(window);
    s.tree_width = s.plan_width = int32_t(rows);
    s.origin = s.depth > 0 ? TokenOrigin::Guess : TokenOrigin::Target;  // no draft model
    out.push_back(s);
  }
  return out;
}
}  // namespace

DecodeResult generate_pjd(const model::Gpt& target, const model::Condition& cond,
                          const DecodeRequest& request, const StepCallback& on_step,
                          const std::atomic<bool>* cancel) {
  if (request.method.method != Method::Pjd)
    throw Error("generate_pjd: '" + to_string(request.method.method) + "' is not pjd");
  c10::InferenceMode guard;
  const auto t_start = Clock::now();
  const auto& cfg = target.config();
  request.sampling.check_condition_batch(cond.batch());  // the settings: checked by run_decode
  const int64_t batch = cond.batch();
  const LogitsProcessor proc(request.sampling, cfg.image_tokens());
  CouplingNoise noise(request.seed, cfg.vocab_size);
  Rng rng(request.seed);
  const VerifyRule rule = resolve_verify(request.method, request.sampling);
  PjdState state(request.method.pjd, cfg.grid_h, cfg.grid_w, cfg.vocab_size, rule, &noise);
  DecodeResult res;
  describe_run(res.stats, cfg, request, rule);
  const TraceOptions no_trace;  // PJD verifies no tree: its steps have no trace
  StepRecorder recorder(res.stats, no_trace, on_step);
  auto cache = target.new_cache(batch, state.max_block());

  auto t0 = Clock::now();
  auto pre = target.prefill(cache, cond);
  const double prefill_ms = ms_since(t0);
  t0 = Clock::now();
  auto p0 = proc.process(pre.logits, 0);
  const int64_t first = noise.choose(p0.probs[0], 0);
  state.start(first);
  recorder.prefill(p0, first, prefill_ms, ms_since(t0));

  while (!state.done() && !(cancel && cancel->load())) {
    StepRecord rec;
    rec.step = int64_t(res.stats.steps.size());
    t0 = Clock::now();
    const auto block = state.build(rng);
    std::vector<int64_t> tok, pos, predicts;
    for (const auto& e : block.entries) {
      tok.push_back(e.token);
      pos.push_back(cfg.cond_tokens() + e.cell);
      predicts.push_back(e.predicts < 0 ? e.cell : e.predicts);  // cfg_interval reads the index
    }
    const int64_t q = int64_t(tok.size()), rows = state.active_rows();
    rec.t_other_ms = ms_since(t0);

    t0 = Clock::now();
    auto tokens = long_tensor(tok).unsqueeze(0).expand({batch, q});
    auto out = target.forward(target.embed_tokens(tokens), long_tensor(pos), &cache, block.mask);
    rec.t_verify_ms = ms_since(t0);
    rec.target_forwards = 1;

    t0 = Clock::now();
    auto p = proc.process_rows(out.logits, predicts);
    const auto commit = state.accept(block, p.probs.to(at::kCPU), rng);
    rec.t_sample_ms = ms_since(t0);

    t0 = Clock::now();  // the cached cells stay, then the block's rows that became cached cells
    std::vector<int64_t> keep;
    const int64_t s = cache.pending - q;
    for (int64_t i = 0; i < s; ++i) keep.push_back(i);
    for (auto j : commit.keep) keep.push_back(s + j);
    cache.keep_pending(keep);
    rec.drafted = block.drafted();
    rec.tree_depth = request.method.pjd.window - 1;
    rec.tree_width = rows;
    rec.plan_depth = rec.tree_depth;
    rec.plan_width = rows;
    rec.relaxed = commit.relaxed;
    rec.cum_tokens = state.committed();
    rec.alpha = rec.drafted > 0 ? double(commit.cells.size() - 1) / double(rec.drafted) : 0.0;
    rec.t_other_ms += ms_since(t0);
    const auto top1 = p.top1.to(at::kCPU).contiguous();
    recorder.cells_step(rec, commit.cells, commit.tokens,
                        cell_stats(commit, top1, rec.tree_depth, rows));
  }
  res.tokens = state.done() ? state.grid() : state.raster_prefix();
  res.cancelled = !state.done();
  res.stats.finish(ms_since(t_start));
  return res;
}

}  // namespace adtree::decode
