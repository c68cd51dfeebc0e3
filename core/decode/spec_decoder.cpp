#include "decode/spec_decoder.h"

#include <c10/core/InferenceMode.h>

#include <chrono>
#include <memory>

#include "decode/acceptance.h"
#include "decode/adt_policy.h"
#include "decode/jacobi.h"
#include "decode/trace_record.h"
#include "decode/tree_builder.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
}  // namespace

namespace {
// The loop itself. `source` drafts for the tree methods; for the Jacobi methods it is null and a
// JacobiState proposes, verifies and recycles instead (SPEC_DECODING.md 6).
DecodeResult decode_loop(const model::Gpt& target, DraftSource* source,
                         const model::Condition& cond, const DecodeRequest& request,
                         const SpecOptions& opts, const StepCallback& on_step,
                         const std::atomic<bool>* cancel) {
  c10::InferenceMode guard;
  const auto& cfg = target.config();
  const auto& m = request.method;
  const auto& sp = request.sampling;
  m.validate(cfg.vocab_size, cfg.image_tokens());
  sp.validate(cfg.vocab_size);
  const int64_t batch = sp.uses_cfg() ? 2 : 1;
  if (cond.batch() != batch) throw Error("the condition batch does not match the CFG setting");
  const int64_t n_img = opts.max_tokens > 0 ? std::min(opts.max_tokens, cfg.image_tokens())
                                            : cfg.image_tokens();
  const auto t_start = Clock::now();

  LogitsProcessor target_proc(sp);
  // Drafting needs a real distribution even for greedy decoding: rank by q at temperature 1.
  SamplingParams draft_params = sp;
  if (draft_params.greedy()) draft_params.temperature = 1.0;
  LogitsProcessor draft_proc(draft_params);
  const ChildRule rule = sp.greedy() || m.method != "static" ? ChildRule::Deterministic
                                                              : ChildRule::WithoutReplacement;
  const StaticTreeSpec static_spec =
      m.method == "static" ? StaticTreeSpec::preset(m.static_tree.preset) : StaticTreeSpec{};
  AdtPolicy adt(m.adt, cfg.grid_h, cfg.grid_w, request.seed);
  std::unique_ptr<JacobiState> jacobi;
  if (!source) jacobi = std::make_unique<JacobiState>(m.method, m.jacobi, cfg.grid_h, cfg.grid_w, cfg.vocab_size, n_img);
  // Jacobi steps verify at most K chains of their length; the trees verify N.
  const int64_t budget = jacobi ? jacobi->paths() * jacobi->length() : opts.budget;
  if (m.method != "static" && budget < 1) throw Error("the verification budget N must be resolved (> 0)");
  Rng rng(request.seed);
  const TraceOptions& tr = request.trace;

  DecodeResult res;
  const bool lossless = !opts.lantern && (!jacobi || jacobi->lossless());
  res.stats.method = (jacobi ? jacobi->label() : m.method) + (opts.lantern ? "+lantern" : "") +
                     (jacobi && !jacobi->lossless() ? " (lossy)" : "");
  res.stats.settings = {{"method", m.method}, {"seed", request.seed}, {"sampling", sp.to_json()},
                        {"budget", budget}, {"lantern", opts.lantern != nullptr}, {"lossless", lossless}};
  res.stats.grids = CellGrids(cfg.grid_h, cfg.grid_w);
  auto& tokens = res.tokens;

  // The target's block can hold the root and every node of the largest tree.
  const int64_t max_nodes =
      jacobi ? budget
      : m.method == "static" ? int64_t(static_spec.paths.size())
                           : std::max<int64_t>(budget, m.method == "adt"
                                                           ? m.adt.k_max * m.adt.d_max
                                                           : m.dynamic_tree.width);
  auto cache = target.new_cache(batch, std::max<int64_t>(max_nodes, budget) + 2);

  // Step 0: the prefill; its token is the first root.
  auto t0 = Clock::now();
  auto pre = target.prefill(cache, cond);
  const double prefill_ms = ms_since(t0);
  t0 = Clock::now();
  auto p0 = target_proc.process(pre.logits, 0);
  tokens.push_back(sample_from(p0.probs[0], rng));
  {
    StepRecord rec;
    rec.method = res.stats.method;
    rec.committed = 1;
    rec.cum_tokens = 1;
    rec.target_forwards = 1;
    rec.t_verify_ms = prefill_ms;
    rec.t_sample_ms = ms_since(t0);
    CellStats cs;
    cs.top1 = p0.top1[0].item<float>();
    cs.accept_len = 1;
    res.stats.grids.set(0, cs);
    res.stats.add_step(rec);
    if (tr.enabled) {
      StepTrace st;  // the prefill: no tree, the target samples the first token
      st.has_bonus = true;
      st.bonus = tokens[0];
      st.cells.push_back(trace_cell(p0.view[0], 0, tokens[0], false, nullptr, -1, tr));
      res.stats.traces.push_back(std::move(st));
    }
    if (on_step) {
      std::vector<int64_t> tk{tokens[0]};
      std::vector<CellStats> cells{cs};
      on_step(StepEvent{res.stats.steps.back(), tk, cells, tr.enabled ? &res.stats.traces.back() : nullptr});
    }
  }
  if (source) {
    source->start(cond, pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1));
    source->take_forward_ms();
  }
  // Rows the draft source has not seen: tokens with their predecessor's target feature.
  std::vector<int64_t> todo_tokens{tokens[0]};
  at::Tensor todo_feats = pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1);
  int64_t todo_first = 0;

  while (int64_t(tokens.size()) < n_img) {
    if (cancel && cancel->load()) {
      res.cancelled = true;
      break;
    }
    StepRecord rec;
    rec.step = int64_t(res.stats.steps.size());
    rec.method = res.stats.method;
    const int64_t n = int64_t(tokens.size()) - 1;  // image index of the root
    const int64_t max_levels = n_img - 1 - n;

    // Draft.
    t0 = Clock::now();
    TreeShape shape{m.dynamic_tree.depth + 1, m.dynamic_tree.width};
    std::string adt_origin;
    DraftTree tree;
    if (jacobi) {
      // No draft model: the window's guesses, K chains of d levels (d = 0 inside a margin).
      tree = jacobi->build_tree(tokens, max_levels, rng);
      shape = TreeShape{tree.levels, tree.width};
    } else {
      auto root_logits = source->begin_step(todo_tokens, todo_feats, todo_first);
      DraftContext ctx{*source, draft_proc, root_logits, tokens.back(), n, max_levels};
      if (m.method == "static") {
        tree = build_static_tree(ctx, static_spec, rule == ChildRule::WithoutReplacement, rng);
        shape = TreeShape{tree.levels, tree.width};
      } else {
        if (m.method == "adt") {
          const double conf =
              m.adt.adjacency == Adjacency::Confidence ? root_confidence(ctx) : 0.0;
          shape = adt.shape_for(n, tr.enabled ? &adt_origin : nullptr, conf);
        }
        tree = build_dynamic_tree(ctx, shape.d, shape.k, budget);
      }
      source->end_step();
    }
    // Draft-model forwards count as drafting; building and ranking the tree as bookkeeping.
    const double draft_total = ms_since(t0);
    rec.t_draft_ms = source ? source->take_forward_ms() : 0.0;
    double bookkeeping_ms = draft_total - rec.t_draft_ms;
    rec.tree_depth = shape.d;
    rec.tree_width = shape.k;
    rec.budget = m.method == "static" ? int64_t(static_spec.paths.size()) : budget;
    rec.drafted = tree.size() - 1;

    // Verify: root + nodes in one target forward with the ancestor mask.
    t0 = Clock::now();
    const int64_t q = tree.size();
    std::vector<int64_t> pos, tok, predicts;
    for (const auto& nd : tree.nodes) {
      pos.push_back(cfg.cond_tokens() + n + nd.depth);
      tok.push_back(nd.token);
      predicts.push_back(n + nd.depth + 1);
    }
    auto tok_t = at::tensor(tok, at::TensorOptions().dtype(at::kLong)).unsqueeze(0).expand({batch, q});
    auto out = target.forward(target.embed_tokens(tok_t), at::tensor(pos, at::TensorOptions().dtype(at::kLong)),
                              &cache, tree.ancestor_mask());
    rec.t_verify_ms = ms_since(t0);
    rec.target_forwards = 1;

    // Accept.
    t0 = Clock::now();
    auto proc = target_proc.process_rows(out.logits, predicts);
    auto top1 = proc.top1.to(at::kCPU);
    auto acc = jacobi ? jacobi->accept(tree, proc.probs, opts.lantern, max_levels, rng)
                      : verify_tree(tree, proc.probs, rule, opts.lantern, max_levels, rng);
    if (jacobi) jacobi->recycle(acc, rng);  // new guesses are samples: timed as sampling
    rec.t_sample_ms = ms_since(t0);

    // Commit: compact the accepted path's K/V rows, record the cells, queue the draft rows.
    t0 = Clock::now();
    std::vector<int64_t> keep{0};
    keep.insert(keep.end(), acc.path.begin(), acc.path.end());
    cache.keep(keep);
    const int64_t a = int64_t(acc.path.size());
    std::vector<int64_t> new_tokens;
    std::vector<CellStats> cells;
    std::vector<int64_t> parents{0};
    for (auto id : acc.path) {
      new_tokens.push_back(tree.nodes[size_t(id)].token);
      parents.push_back(id);
    }
    if (acc.has_bonus) new_tokens.push_back(acc.bonus);
    const int32_t committed = int32_t(new_tokens.size());
    std::vector<int64_t> new_cells;
    for (int64_t i = 0; i < committed; ++i) {
      CellStats cs;
      const bool drafted = i < a;
      cs.depth = drafted ? int32_t(tree.nodes[size_t(acc.path[size_t(i)])].depth) : 0;
      cs.rank = drafted ? tree.nodes[size_t(acc.path[size_t(i)])].rank : 0;
      cs.top1 = top1[parents[size_t(i)]].item<float>();  // p at the node that predicted it
      cs.accept_len = committed;
      cs.tree_depth = int32_t(shape.d);
      cs.tree_width = int32_t(shape.k);
      const int64_t cell = n + 1 + i;
      res.stats.grids.set(cell, cs);
      new_cells.push_back(cell);
      cells.push_back(cs);
    }
    TreeShape next_shape;
    if (m.method == "adt") {
      next_shape = adt.update(shape, a, new_cells);
    }
    rec.committed = committed;
    rec.alpha = shape.d > 0 ? double(a) / double(shape.d) : 0;
    rec.first_cell = n + 1;
    tokens.insert(tokens.end(), new_tokens.begin(), new_tokens.end());
    rec.cum_tokens = int64_t(tokens.size());
    // Next step's draft rows: each new token with the target feature of its predecessor.
    if (source) {
      todo_tokens = new_tokens;
      todo_feats = out.hidden.index_select(1, at::tensor(std::vector<int64_t>(parents.begin(), parents.begin() + committed),
                                                         at::TensorOptions().dtype(at::kLong)));
      todo_first = n + 1;
    }
    rec.t_other_ms = ms_since(t0) + bookkeeping_ms;
    res.stats.add_step(rec);
    if (tr.enabled) {
      // After the timings: tracing is for inspection and must not colour the step's time split.
      auto st = trace_tree_step(rec.step, tree, proc.view, acc, n + 1, tr);
      if (m.method == "adt") {
        st.has_adt = true;
        st.adt = AdtTrace{shape.d, shape.k, adt_origin, a, rec.alpha, m.adt.beta, next_shape.d,
                          next_shape.k, AdtPolicy::describe(m.adt, rec.alpha)};
      }
      res.stats.traces.push_back(std::move(st));
    }
    if (on_step) {
      on_step(StepEvent{res.stats.steps.back(), new_tokens, cells,
                        tr.enabled ? &res.stats.traces.back() : nullptr});
    }
  }
  res.stats.finish(ms_since(t_start));
  return res;
}
}  // namespace

DecodeResult generate_speculative(const model::Gpt& target, DraftSource& source,
                                  const model::Condition& cond, const DecodeRequest& request,
                                  const SpecOptions& opts, const StepCallback& on_step,
                                  const std::atomic<bool>* cancel) {
  const auto& m = request.method.method;
  if (m != "static" && m != "dynamic" && m != "adt") {
    throw Error("generate_speculative: '" + m + "' is not a draft-tree method");
  }
  return decode_loop(target, &source, cond, request, opts, on_step, cancel);
}

DecodeResult generate_jacobi(const model::Gpt& target, const model::Condition& cond,
                             const DecodeRequest& request, const SpecOptions& opts,
                             const StepCallback& on_step, const std::atomic<bool>* cancel) {
  const auto& m = request.method.method;
  if (m != "sjd" && m != "pathspec") {
    throw Error("generate_jacobi: '" + m + "' is not a Jacobi method (sjd or pathspec)");
  }
  return decode_loop(target, nullptr, cond, request, opts, on_step, cancel);
}

}  // namespace adtree::decode
