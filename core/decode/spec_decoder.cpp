#include "decode/spec_decoder.h"

#include <c10/core/InferenceMode.h>

#include <chrono>
#include <memory>

#include "decode/coupling.h"
#include "decode/proposer.h"
#include "decode/step_recorder.h"
#include "decode/verifier.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Everything the loop uses besides the model: processors, noise, rule, proposer and verifier.
struct LoopParts {
  LogitsProcessor target_proc, draft_proc;
  CouplingNoise noise;
  Rng rng;
  VerifyRule rule;
  std::unique_ptr<Proposer> proposer;
  std::unique_ptr<Verifier> own_verifier;
  Verifier* verifier = nullptr;

  LoopParts(const model::GptConfig& cfg, DraftSource* source, const DecodeRequest& r,
            const SpecOptions& opts, int64_t n_img)
      : target_proc(r.sampling),
        draft_proc(draft_params(r.sampling)),
        noise(r.seed, cfg.vocab_size),
        rng(r.seed),
        rule(resolve_verify(r.method, r.sampling)) {
    ChildPicker picker{rule == VerifyRule::Maximal ? VerifyRule::Sampled : rule, &noise, &rng};
    proposer = make_proposer(ProposerInputs{r.method, cfg, source, draft_proc, picker, opts.budget,
                                            opts.auto_budget, n_img, r.seed, &noise, rule});
    if (auto* js = jacobi_state(*proposer)) {
      own_verifier = make_jacobi_verifier(*js, opts.lantern, rng);
    } else if (rule == VerifyRule::Coupled) {
      own_verifier = make_coupled_verifier(noise);
    } else {
      const auto child =
          rule == VerifyRule::Sampled ? ChildRule::WithoutReplacement : ChildRule::Deterministic;
      own_verifier = make_rejection_verifier(child, opts.lantern, rng);
    }
    verifier = opts.verifier ? opts.verifier : own_verifier.get();
  }
  // Drafting needs a real distribution even for greedy decoding: rank by q at temperature 1.
  static SamplingParams draft_params(SamplingParams p) {
    if (p.greedy()) p.temperature = 1.0;
    return p;
  }
};

at::Tensor long_tensor(const std::vector<int64_t>& v) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong));
}

DecodeResult decode_loop(const model::Gpt& target, DraftSource* source,
                         const model::Condition& cond, const DecodeRequest& request,
                         const SpecOptions& opts, const StepCallback& on_step,
                         const std::atomic<bool>* cancel) {
  c10::InferenceMode guard;
  const auto& cfg = target.config();
  request.method.validate(cfg.vocab_size, cfg.image_tokens());
  auto req = request;  // a relaxed rule given by the caller counts as the settings' own
  if (opts.lantern) req.method.acceptance = Acceptance::Lantern;
  const auto& m = req.method;
  m.validate_verify();
  request.sampling.validate(cfg.vocab_size);
  const int64_t batch = request.sampling.uses_cfg() ? 2 : 1;
  if (cond.batch() != batch) throw Error("the condition batch does not match the CFG setting");
  const int64_t n_img =
      opts.max_tokens > 0 ? std::min(opts.max_tokens, cfg.image_tokens()) : cfg.image_tokens();
  const auto t_start = Clock::now();
  LoopParts parts(cfg, source, req, opts, n_img);
  auto& proposer = *parts.proposer;
  if (source && max_draft_rows(m, proposer.max_nodes()) > source->scratch_rows()) {
    throw Error("these tree settings can draft " +
                std::to_string(max_draft_rows(m, proposer.max_nodes())) +
                " rows in one step, more than the draft head's scratch area holds (" +
                std::to_string(source->scratch_rows()) + "): lower the depth, width or budget");
  }
  DecodeResult res;
  const auto* js = jacobi_state(proposer);
  const bool lossless = !opts.lantern && (!js || js->lossless());
  res.stats.method = (js ? js->label() : to_string(m.method)) + (opts.lantern ? "+lantern" : "") +
                     (js && !js->lossless() ? " (lossy)" : "");
  res.stats.settings = {{"method", to_string(m.method)},
                        {"seed", request.seed},
                        {"sampling", request.sampling.to_json()},
                        {"budget", proposer.budget()},
                        {"verify", request.sampling.greedy() ? "greedy" : to_string(parts.rule)},
                        {"lantern", opts.lantern != nullptr},
                        {"lossless", lossless}};
  res.stats.grids = CellGrids(cfg.grid_h, cfg.grid_w);
  StepRecorder recorder(res.stats, request.trace, on_step);
  auto& tokens = res.tokens;
  auto cache = target.new_cache(batch, proposer.max_nodes() + 2);  // root + the largest tree

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

    t0 = Clock::now();  // draft-model forwards count as drafting, the rest as bookkeeping
    DraftTree tree = proposer.propose(tokens, max_levels);
    const double propose_ms = ms_since(t0);
    rec.t_draft_ms = proposer.take_draft_ms();

    t0 = Clock::now();  // verify: root + nodes in one target forward with the ancestor mask
    std::vector<int64_t> pos, tok, predicts;
    for (const auto& nd : tree.nodes) {
      pos.push_back(cfg.cond_tokens() + n + nd.depth);
      tok.push_back(nd.token);
      predicts.push_back(n + nd.depth + 1);
    }
    auto tok_t = long_tensor(tok).unsqueeze(0).expand({batch, tree.size()});
    auto out =
        target.forward(target.embed_tokens(tok_t), long_tensor(pos), &cache, tree.ancestor_mask());
    rec.t_verify_ms = ms_since(t0);
    rec.target_forwards = 1;

    t0 = Clock::now();  // accept (and the Jacobi methods' new guesses: both are sampling)
    auto proc = parts.target_proc.process_rows(out.logits, predicts);
    auto acc = parts.verifier->verify(tree, proc.probs.to(at::kCPU), n, max_levels);
    std::vector<int64_t> new_tokens, parents{0};
    for (auto id : acc.path)
      new_tokens.push_back(tree.nodes[size_t(id)].token), parents.push_back(id);
    if (acc.has_bonus) new_tokens.push_back(acc.bonus);
    parents.resize(new_tokens.size());
    proposer.observe(StepOutcome{tree, acc, out.hidden, new_tokens, parents, n + 1});
    rec.t_sample_ms = ms_since(t0);

    t0 = Clock::now();  // commit: compact the accepted path's K/V rows
    std::vector<int64_t> keep{0};
    keep.insert(keep.end(), acc.path.begin(), acc.path.end());
    cache.keep(keep);
    tokens.insert(tokens.end(), new_tokens.begin(), new_tokens.end());
    rec.t_other_ms = ms_since(t0) + propose_ms - rec.t_draft_ms;
    recorder.step(rec, CommittedStep{tree, acc, proc, new_tokens, parents, n + 1}, proposer);
  }
  res.cancelled = cancel && cancel->load() && int64_t(tokens.size()) < n_img;
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
  if (m != Method::Sjd && m != Method::PathSpec) {
    throw Error("generate_jacobi: '" + to_string(m) + "' is not a Jacobi method (sjd or pathspec)");
  }
  return decode_loop(target, nullptr, cond, request, opts, on_step, cancel);
}

}  // namespace adtree::decode
