#include "decode/run.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "decode/jacobi/pjd.h"
#include "decode/settings/method_table.h"
#include "decode/spec_decoder.h"
#include "decode/tree/adt_planner.h"
#include "decode/tree/budget.h"
#include "decode/tree/draft_source.h"
#include "decode/tree/parallel_source.h"
#include "decode/tree/step_cost.h"
#include "decode/tree/tree_builder.h"
#include "decode/verify/lantern.h"
#include "model/prompt_condition.h"
#include "util/error.h"
#include "util/threads.h"

namespace adtree::decode {

namespace {
// Neighbour tables are computed once per codebook and neighbour count (SPEC_DECODING.md 4).
at::Tensor neighbours_for(const model::VqModel& vq, int64_t k) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int64_t>, at::Tensor> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(static_cast<const void*>(&vq), k);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, latent_neighbours(vq.normalized_codebook(), k)).first;
  return it->second;
}

// The relaxed acceptance rule when the settings ask for it (any speculative method), else null.
std::unique_ptr<LanternRule> lantern_for(const model::ModelBundle& model, const MethodSettings& m) {
  if (m.acceptance != Acceptance::Lantern) return nullptr;
  if (!model.vq) throw Error("LANTERN needs the VQ codebook: load the model with its tokenizer");
  return std::make_unique<LanternRule>(neighbours_for(*model.vq, m.lantern.k), m.lantern);
}
}  // namespace

void check_request(const model::ModelBundle& model, const DecodeRequest& request) {
  const auto& g = model.gpt_config;
  validate_settings(request.method, request.sampling, g.vocab_size, g.image_tokens());
  check_token_kind(request.sampling, TokenKind::Codes);
  const auto& m = request.method;
  if (!runs_on(m.method, TokenKind::Codes)) {
    throw Error("method '" + to_string(m.method) +
                "' runs on continuous-token models (their "
                "tokens are vectors); this model's tokens are VQ codes");
  }
  if (m.needs_drafter() && m.head == DraftHead::Eagle && !model.drafter) {
    throw Error("method '" + to_string(m.method) +
                "' needs a draft head, and this model has none (drafter.safetensors): train one "
                "with 'adtree train drafter --model DIR --install', or use ar or a Jacobi method");
  }
  if (m.needs_drafter() && m.head == DraftHead::Parallel && !model.parallel_head) {
    throw Error(
        "--head parallel needs a parallel draft head, and this model has none "
        "(parallel_head.safetensors): train one with 'adtree train drafter --model DIR "
        "--config '{\"kind\": \"parallel\"}' --install', or use --head eagle");
  }
}

namespace {
// The dispatch to a method's loop, for a request already checked (check_request): the loops trust
// it, so a run validates its settings once.
DecodeResult decode_checked(const model::ModelBundle& model, const model::Condition& cond,
                            const DecodeRequest& request, const StepCallback& on_step,
                            const std::atomic<bool>* cancel) {
  const auto& g = model.gpt_config;
  const auto& m = request.method;
  DecodeResult res;
  if (m.method == Method::Ar) {
    if (m.acceptance == Acceptance::Lantern)
      throw Error("LANTERN applies to draft-tree methods, not to ar");
    res = generate_ar(*model.gpt, cond, request.sampling, request.seed, on_step, cancel,
                      request.trace);
  } else if (m.needs_drafter()) {
    const int64_t batch = request.sampling.uses_cfg() ? 2 : 1;
    SpecOptions opts;
    opts.budget = m.dynamic_tree.budget;  // ADT keeps the dynamic tree's N (SPEC_DECODING.md 5)
    BudgetChoice timed;
    StepCosts costs;
    const bool cost_rule = m.method == Method::Adt && m.adt.budget_rule == AdtBudget::Cost;
    const bool parallel = m.head == DraftHead::Parallel;
    if (cost_rule) {
      // N is each step's choice from the device's curve, up to the given N (auto: the largest).
      costs = !m.adt.cost_curve.empty() ? load_step_costs(m.adt.cost_curve)
              : parallel ? measure_parallel_costs(*model.gpt, *model.parallel_head, batch)
                         : measure_step_costs(*model.gpt, *model.drafter, batch,
                                              model.drafter_mixed ? 1 : batch);
      opts.costs = &costs;
      if (opts.budget == 0) opts.budget = kMaxAutoBudget;
    } else if (opts.budget == 0 && m.method != Method::Static) {
      // auto: the fixed model's first guess, then N follows the run's acceptance (budget.h).
      timed = choose_budget(*model.gpt, batch);
      opts.budget = timed.budget;
      opts.auto_budget = &timed;
    }
    int64_t largest = opts.budget;
    for (const auto& [n, ms] : timed.cost_ms) largest = std::max(largest, n);
    auto lantern = lantern_for(model, m);
    opts.lantern = lantern.get();
    const int64_t scratch = std::max(kDefaultScratchRows, max_draft_rows(m, largest));
    if (cost_rule && !drafts_can_pay(costs, 1 + opts.budget + kMaxFree)) {
      // No tree can pay on this curve, whatever it drafts: AR itself, without the speculative
      // loop's bookkeeping (SPEC_DECODING.md 5.8).
      res = generate_ar(*model.gpt, cond, request.sampling, request.seed, on_step, cancel,
                        request.trace);
      res.stats.settings.ran_as_ar = kNoTreePays;
    } else {
      auto source = parallel ? make_parallel_source(*model.parallel_head, *model.gpt, batch)
                             : make_eagle_source(*model.drafter, *model.gpt, batch, scratch,
                                                 model.drafter_mixed);
      res = generate_speculative(*model.gpt, *source, cond, request, opts, on_step, cancel);
    }
    if (cost_rule && m.adt.cost_curve.empty()) {
      // What plain AR would take on this device: a timed one-token step per token after the
      // prefill (the front ends say the run's speed against it).
      res.stats.settings.ar_estimate_ms = double(g.image_tokens() - 1) * costs.verify(1);
    }
  } else if (m.method == Method::Pjd) {
    res = generate_pjd(*model.gpt, cond, request, on_step, cancel);
  } else {
    // Jacobi: training-free, no draft head needed, any model runs them (SPEC_DECODING.md 6).
    SpecOptions opts;
    auto lantern = lantern_for(model, m);
    opts.lantern = lantern.get();
    res = generate_jacobi(*model.gpt, cond, request, opts, on_step, cancel);
  }
  res.stats.settings.request.method = m;
  return res;
}
}  // namespace

DecodeResult run_decode(const model::ModelBundle& model, const model::Condition& cond,
                        const DecodeRequest& request, const StepCallback& on_step,
                        const std::atomic<bool>* cancel) {
  check_request(model, request);
  return decode_checked(model, cond, request, on_step, cancel);
}

RunSettings prepare_run(const model::ModelBundle& model, const DecodeRequest& request,
                        const std::string& prompt, const model::LoadOptions& where) {
  check_request(model, request);
  RunSettings run;
  run.request = request;
  run.prompt = prompt;
  run.model_dir = model.dir;
  run.model_name = model.manifest.name;
  run.model_hash = model.hash;
  run.device = where.device;
  run.dtype = where.dtype;
  run.threads = worker_threads();
  return run;
}

model::Condition prepare_condition(const model::ModelBundle& model, RunSettings& run) {
  model::PromptEncoding enc;
  auto cond = model::condition_for_prompt(model, run.prompt, run.request.sampling.uses_cfg(), &enc);
  if (enc.typed) {
    run.text_encoder = model.text_encoder->dir();
    run.text_encoder_hash = model.text_encoder->hash();
    run.prompt_tokens = enc.tokens;
    run.prompt_truncated = enc.truncated;
    run.prompt_encode_ms = enc.ms;
  }
  return cond;
}

DecodeResult run_decode(const model::ModelBundle& model, const model::Condition& cond,
                        const RunSettings& run, const StepCallback& on_step,
                        const std::atomic<bool>* cancel) {
  // prepare_run checked the request: not again.
  auto res = decode_checked(model, cond, run.request, on_step, cancel);
  auto& s = res.stats.settings;
  s.prompt = run.prompt;
  s.model_dir = run.model_dir;
  s.model_name = run.model_name;
  s.model_hash = run.model_hash;
  s.device = run.device;
  s.dtype = run.dtype;
  s.threads = run.threads;
  s.text_encoder = run.text_encoder;
  s.text_encoder_hash = run.text_encoder_hash;
  s.prompt_tokens = run.prompt_tokens;
  s.prompt_truncated = run.prompt_truncated;
  s.prompt_encode_ms = run.prompt_encode_ms;
  return res;
}

}  // namespace adtree::decode
