#include "decode/spec_decoder.h"

#include <c10/core/InferenceMode.h>

#include <chrono>
#include <memory>

#include "decode/device/block_runner.h"
#include "decode/device/device_verify.h"
#include "decode/device/step_buffers.h"
#include "decode/settings/method_table.h"
#include "decode/stats/step_recorder.h"
#include "decode/tree/proposer.h"
#include "decode/verify/coupling.h"
#include "decode/verify/verifier.h"
#include "util/clock.h"
#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

// Everything the loop uses besides the model: processors, noise, rule, proposer and verifier.
struct LoopParts {
  LogitsProcessor target_proc, draft_proc;
  CouplingNoise noise;
  Rng rng;
  VerifyRule rule;
  std::unique_ptr<Proposer> proposer;
  std::unique_ptr<Verifier> own_verifier;
  Verifier* verifier = nullptr;
  StepCosts flat_;  // the curve when the caller gave none

  // `m`: the checked settings (with the caller's relaxed rule); `r` the request they came from.
  LoopParts(const model::GptConfig& cfg, DraftSource* source, const MethodSettings& m,
            const DecodeRequest& r, const SpecOptions& opts, int64_t n_img)
      : target_proc(r.sampling, cfg.image_tokens()),
        draft_proc(draft_params(r.sampling), cfg.image_tokens()),
        noise(r.seed, cfg.vocab_size),
        rng(r.seed),
        rule(resolve_verify(m, r.sampling)) {
    ChildPicker picker{rule == VerifyRule::Maximal ? VerifyRule::Sampled : rule, &noise, &rng};
    if (!opts.costs) flat_ = flat_step_costs();
    proposer = make_proposer(ProposerInputs{m, cfg, source, draft_proc, picker, opts.budget,
                                            opts.auto_budget, n_img, r.seed, &noise, rule,
                                            r.sampling.greedy(), opts.costs ? opts.costs : &flat_});
    if (source && max_draft_rows(m, proposer->max_nodes()) > source->scratch_rows()) {
      throw Error("these tree settings can draft " +
                  std::to_string(max_draft_rows(m, proposer->max_nodes())) +
                  " rows in one step, more than the draft head's scratch area holds (" +
                  std::to_string(source->scratch_rows()) + "): lower the depth, width or budget");
    }
    if (auto* js = jacobi_state(*proposer)) {
      own_verifier = make_jacobi_verifier(*js, opts.lantern, rng);
    } else if (rule == VerifyRule::Coupled) {
      own_verifier = make_coupled_verifier(noise);
    } else {
      const auto child =
          rule == VerifyRule::Sampled ? ChildRule::WithoutReplacement : ChildRule::Deterministic;
      own_verifier = m.acceptance == Acceptance::Cascade
                         ? make_cascade_verifier(child, m.cascade, rng)
                         : make_rejection_verifier(child, opts.lantern, rng);
    }
    verifier = opts.verifier ? opts.verifier : own_verifier.get();
  }
  // Drafting needs a real distribution even for greedy decoding: rank by q at temperature 1.
  static SamplingParams draft_params(SamplingParams p) {
    if (p.greedy()) p.temperature = 1.0;
    return p;
  }
};

// The settings checked against each other and the model, before anything runs.
MethodSettings checked_settings(const model::Condition& cond, const DecodeRequest& request,
                                const SpecOptions& opts) {
  // The request itself was checked once, by run_decode (decode/run.h); what the loop adds to it is
  // checked here.
  auto m = request.method;  // a relaxed rule given by the caller counts as the settings' own
  if (opts.lantern) m.acceptance = Acceptance::Lantern;
  m.validate_verify();
  request.sampling.check_condition_batch(cond.batch());
  return m;
}

// The run's label and settings in its statistics: method, rule, budget, whether it is lossless.
void describe_run(RunStats& stats, const model::GptConfig& cfg, const DecodeRequest& request,
                  const LoopParts& parts, bool lantern) {
  const auto* js = jacobi_state(*parts.proposer);
  const auto& m = request.method;
  const bool cascade = m.acceptance == Acceptance::Cascade;
  DecodeRequest ran = request;  // a relaxed rule given by the caller counts as the settings' own
  if (lantern) ran.method.acceptance = Acceptance::Lantern;
  const bool lossless = is_lossless(ran);
  stats.method = (js ? js->label() : to_string(m.method)) + (lantern ? "+lantern" : "") +
                 (cascade ? "+cascade" : "") + (js && !lossless ? " (lossy)" : "");
  auto& s = stats.settings;
  s.request = request;
  s.budget = parts.proposer->budget();
  s.verify = request.sampling.greedy() ? "greedy" : to_string(parts.rule);
  s.lantern = lantern;
  s.relax = lantern ? Acceptance::Lantern : m.acceptance;
  s.lossless = lossless;
  stats.grids = CellGrids(cfg.grid_h, cfg.grid_w);
}

// The rows of a padded block's output that belong to the tree's `real` nodes.
model::Gpt::Output without_padding(model::Gpt::Output out, int64_t real) {
  if (out.logits.size(1) > real) {
    out.logits = out.logits.narrow(1, 0, real);
    out.hidden = out.hidden.narrow(1, 0, real);
  }
  return out;
}

// One target forward over the root and every node under the ancestor mask, from the step's static
// buffers (padded to the tree's bucket when asked); row i predicts image cell `predicts[i]` =
// root + depth + 1. The padding rows are cut off the output.
model::Gpt::Output forward_tree(const model::Gpt& target, model::KvCache& cache,
                                StepBuffers& buffers, const DraftTree& tree, int64_t root,
                                std::vector<int64_t>& predicts) {
  for (const auto& nd : tree.nodes) predicts.push_back(root + nd.depth + 1);
  const auto in = buffers.fill(tree, target.config().cond_tokens() + root);
  return without_padding(
      target.forward(target.embed_tokens(in.tokens), in.positions, &cache, in.mask), in.real);
}

// The tokens a verified step commits (the accepted path, then the bonus) and, for each, the node
// whose row predicted it.
std::pair<std::vector<int64_t>, std::vector<int64_t>> committed_by(const DraftTree& tree,
                                                                   const AcceptResult& acc) {
  std::vector<int64_t> tokens, parents{0};
  for (auto id : acc.path) tokens.push_back(tree.nodes[size_t(id)].token), parents.push_back(id);
  if (acc.has_bonus) tokens.push_back(acc.bonus);
  parents.resize(tokens.size());
  return {tokens, parents};
}

// Whether the steps run on the device (device_tree.h): asked for, or by default off the CPU, for
// the settings it covers.
bool runs_on_device(const SpecOptions& opts, const LoopParts& parts, const DecodeRequest& r,
                    at::Device device) {
  const bool rule_ok = parts.rule == VerifyRule::Coupled ||
                       (parts.rule == VerifyRule::Deterministic && r.sampling.greedy());
  const bool covered = parts.proposer->builds_on_device() && rule_ok && !opts.lantern &&
                       !opts.verifier && r.method.acceptance != Acceptance::Cascade &&
                       !r.trace.enabled;
  const auto mode = r.method.device_step;
  if (mode == DeviceStep::On && !covered) {
    throw Error(
        "the device step covers dynamic and ADT trees under greedy or coupled "
        "verification, without LANTERN, CASCADE, traces or the confidence-only shape "
        "baseline: these settings need --device-step off");
  }
  if (mode == DeviceStep::Auto) return covered && !device.is_cpu();
  return mode == DeviceStep::On;
}

// One verified step as the rest of the loop needs it, whichever way it ran.
struct VerifiedStep {
  DraftTree tree;
  AcceptResult acc;
  Processed target;           // the verification rows the recorder reads (top1 at least)
  at::Tensor hidden;          // target features [B, nodes, D], row i after tree node i
  std::vector<int64_t> keep;  // block rows the cache keeps: the root's and the path's
  at::Tensor probs;           // the host step's processed rows on the CPU (undefined otherwise)
};

// The parts of the loop a step uses.
struct StepParts {
  const model::Gpt& target;
  model::KvCache& cache;
  StepBuffers& buffers;
  LoopParts& parts;
  BlockRunner* fixed = nullptr;  // device steps on fixed shapes
};

// Timings go into `rec`: draft-model forwards count as drafting, the rest of proposing as
// bookkeeping (`propose_ms` is the whole), the target forward as verification, the rule as
// sampling. `propose` returns the step's tree.
template <class Propose>
auto timed_proposal(StepParts& s, StepRecord& rec, double& propose_ms, Propose propose) {
  const auto t0 = Clock::now();
  auto tree = propose();
  propose_ms = ms_since(t0);
  rec.t_draft_ms = s.parts.proposer->take_draft_ms();
  return tree;
}

VerifiedStep host_step(StepParts& s, const std::vector<int64_t>& tokens, int64_t max_levels,
                       StepRecord& rec, double& propose_ms) {
  const int64_t n = int64_t(tokens.size()) - 1;
  DraftTree tree = timed_proposal(s, rec, propose_ms,
                                  [&] { return s.parts.proposer->propose(tokens, max_levels); });
  auto t0 = Clock::now();
  std::vector<int64_t> predicts;
  auto out = forward_tree(s.target, s.cache, s.buffers, tree, n, predicts);
  rec.t_verify_ms = ms_since(t0);
  t0 = Clock::now();  // accept (and the Jacobi methods' new guesses: both are sampling)
  auto proc = s.parts.target_proc.process_rows(out.logits, predicts);
  const auto probs = proc.probs.to(at::kCPU);
  auto acc = s.parts.verifier->verify(tree, probs, proc.mixed.to(at::kCPU), n, max_levels);
  rec.t_sample_ms = ms_since(t0);
  std::vector<int64_t> keep{0};
  keep.insert(keep.end(), acc.path.begin(), acc.path.end());
  return VerifiedStep{std::move(tree), std::move(acc), std::move(proc), out.hidden, keep, probs};
}

// The same on the device: tree, forward and rule stay there; one read brings the verdict back.
VerifiedStep device_step(StepParts& s, const std::vector<int64_t>& tokens, int64_t max_levels,
                         StepRecord& rec, double& propose_ms) {
  const int64_t n = int64_t(tokens.size()) - 1;
  const auto tree = timed_proposal(
      s, rec, propose_ms, [&] { return s.parts.proposer->propose_on_device(tokens, max_levels); });
  auto t0 = Clock::now();
  const int64_t first = s.target.config().cond_tokens() + n;
  const auto in = s.buffers.fill(tree, first);
  const model::PositionBounds bounds{first, first + tree.levels};
  const auto out =
      without_padding(s.fixed ? s.fixed->run(in, bounds)
                              : s.target.forward(s.target.embed_tokens(in.tokens), in.positions,
                                                 &s.cache, in.mask, {}, 0, bounds),
                      in.real);
  rec.t_verify_ms = ms_since(t0);
  t0 = Clock::now();
  const auto proc = s.parts.target_proc.process_rows(out.logits, tree.depths + (n + 1));
  auto v = verify_on_device(tree, proc, s.parts.rule != VerifyRule::Coupled, max_levels);
  rec.t_sample_ms = ms_since(t0);
  // Nodes without draft mass were verified but are not part of the tree the host sees.
  auto hidden =
      int64_t(v.rows.size()) == tree.size
          ? out.hidden
          : out.hidden.index_select(1, to_device_async(at::tensor(v.rows), out.hidden.device()));
  Processed shown;
  shown.top1 = v.top1;
  return VerifiedStep{std::move(v.tree), std::move(v.acc), std::move(shown), hidden, v.keep, {}};
}

DecodeResult decode_loop(const model::Gpt& target, DraftSource* source,
                         const model::Condition& cond, const DecodeRequest& request,
                         const SpecOptions& opts, const StepCallback& on_step,
                         const std::atomic<bool>* cancel) {
  c10::InferenceMode guard;
  const auto t_start = Clock::now();
  const auto& cfg = target.config();
  const int64_t batch = request.sampling.uses_cfg() ? 2 : 1;
  const int64_t n_img =
      opts.max_tokens > 0 ? std::min(opts.max_tokens, cfg.image_tokens()) : cfg.image_tokens();
  LoopParts parts(cfg, source, checked_settings(cond, request, opts), request, opts, n_img);
  auto& proposer = *parts.proposer;
  const bool on_device = runs_on_device(opts, parts, request, target.device());
  DecodeResult res;
  describe_run(res.stats, cfg, request, parts, opts.lantern != nullptr);
  res.stats.settings.device_step = on_device;
  StepRecorder recorder(res.stats, request.trace, on_step);
  auto& tokens = res.tokens;
  const bool fixed = on_device && (opts.fixed_shapes || target.device().is_cuda());
  res.stats.settings.fixed_shapes = fixed;
  StepBuffers buffers(target.device(), batch, opts.pad_to_buckets || fixed);
  // Root + the largest tree, padded to its bucket.
  auto cache = target.new_cache(batch, buffers.rows_for(proposer.max_nodes() + 1) + 1);
  BlockRunner runner(target, cache);
  if (source) source->use_fixed_shapes(fixed);
  StepParts step_parts{target, cache, buffers, parts, fixed ? &runner : nullptr};

  // Step 0: the prefill; its token (coupled AR's first token) is the first root.
  auto t0 = Clock::now();
  auto pre = target.prefill(cache, cond);
  const double prefill_ms = ms_since(t0);
  t0 = Clock::now();
  auto p0 = parts.target_proc.process(pre.logits, 0);
  tokens.push_back(parts.noise.choose(p0.probs[0], 0));
  recorder.prefill(p0, tokens[0], prefill_ms, ms_since(t0));
  proposer.start(cond, pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1));

  while (int64_t(tokens.size()) < n_img && !(cancel && cancel->load())) {
    StepRecord rec;
    rec.step = int64_t(res.stats.steps.size());
    const int64_t n = int64_t(tokens.size()) - 1;  // image index of the root
    const int64_t max_levels = n_img - 1 - n;
    parts.noise.forget_before(n + 1);
    double propose_ms = 0;
    auto s = on_device ? device_step(step_parts, tokens, max_levels, rec, propose_ms)
                       : host_step(step_parts, tokens, max_levels, rec, propose_ms);
    rec.target_forwards = 1;
    rec.relaxed = s.acc.relaxed;

    t0 = Clock::now();
    auto [new_tokens, parents] = committed_by(s.tree, s.acc);
    proposer.observe(StepOutcome{s.tree, s.acc, s.hidden, new_tokens, parents, n + 1, s.probs});
    rec.t_sample_ms += ms_since(t0);

    t0 = Clock::now();  // commit: keep the root's and the accepted path's K/V rows
    cache.keep(s.keep);
    tokens.insert(tokens.end(), new_tokens.begin(), new_tokens.end());
    rec.t_other_ms = ms_since(t0) + propose_ms - rec.t_draft_ms;
    recorder.step(rec, CommittedStep{s.tree, s.acc, s.target, new_tokens, parents, n + 1},
                  proposer);
  }
  res.cancelled = cancel && cancel->load() && int64_t(tokens.size()) < n_img;
  res.stats.settings.graphs = runner.graphs() + (source ? source->graphs() : 0);
  res.stats.finish(ms_since(t_start));
  return res;
}
}  // namespace

DecodeResult generate_speculative(const model::Gpt& target, DraftSource& source,
                                  const model::Condition& cond, const DecodeRequest& request,
                                  const SpecOptions& opts, const StepCallback& on_step,
                                  const std::atomic<bool>* cancel) {
  const auto& m = request.method.method;
  if (m != Method::Static && m != Method::Dynamic && m != Method::Adt) {
    throw Error("generate_speculative: '" + to_string(m) + "' is not a draft-tree method");
  }
  return decode_loop(target, &source, cond, request, opts, on_step, cancel);
}

DecodeResult generate_jacobi(const model::Gpt& target, const model::Condition& cond,
                             const DecodeRequest& request, const SpecOptions& opts,
                             const StepCallback& on_step, const std::atomic<bool>* cancel) {
  const auto& m = request.method.method;
  if (!is_jacobi(m) || m == Method::Pjd) {
    throw Error("generate_jacobi: '" + to_string(m) +
                "' is not a Jacobi method (sjd, pathspec or sjd-pac)");
  }
  return decode_loop(target, nullptr, cond, request, opts, on_step, cancel);
}

}  // namespace adtree::decode
