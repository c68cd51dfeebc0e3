#include "decode/continuous/continuous_decode.h"

#include "decode/continuous/continuous_ar.h"
#include "decode/continuous/cspd_decoder.h"
#include "decode/settings/method_table.h"
#include "util/error.h"

namespace adtree::decode {

void check_continuous_request(const model::ContinuousBundle& m, const DecodeRequest& r) {
  const auto& g = m.target->config().backbone;
  // The table's ranges; the vocabulary bound is moot (no codebook), the image bound is the grid.
  validate_settings(r.method, r.sampling, 0, g.image_tokens());
  const auto method = r.method.method;
  if (!runs_on(method, TokenKind::Vectors)) {
    throw Error("method '" + to_string(method) +
                "' runs on VQ codes; this model's tokens are "
                "vectors (continuous family): use ar or cspd");
  }
  if (method == Method::Cspd && !m.has_draft()) {
    throw Error("cspd needs a draft model, and " + m.dir + " has none (draft.safetensors)");
  }
  const auto& s = r.sampling;
  if (s.greedy()) {
    throw Error(
        "a continuous model samples its tokens from a diffusion head: the temperature "
        "must be above 0 (there is no most likely token)");
  }
  if (s.top_k != 0 || s.top_p != 1.0) {
    throw Error("top-k and top-p filter a codebook's distribution; a continuous model has none");
  }
  if (s.cfg_schedule != CfgSchedule::Constant || s.cfg_interval != -1) {
    throw Error(
        "a continuous model guides every token with a constant CFG scale (--cfg-schedule "
        "constant, no --cfg-interval)");
  }
  check_token_kind(s, TokenKind::Vectors);
  if (s.num_iter != 0)
    throw Error(
        "--num-iter is MAR's masking schedule; this model makes its tokens in raster order");
  if (s.diffusion_steps > m.target->config().train_steps) {
    throw Error("--diffusion-steps " + std::to_string(s.diffusion_steps) + " is more than the " +
                std::to_string(m.target->config().train_steps) + " steps the head was trained on");
  }
}

ContinuousSettings continuous_settings(const model::ContinuousBundle& m, const DecodeRequest& r) {
  ContinuousSettings c;
  c.cfg = r.sampling.cfg_scale;
  c.temperature = r.sampling.temperature;
  c.diffusion_steps = r.sampling.diffusion_steps > 0 ? int(r.sampling.diffusion_steps)
                                                     : m.default_diffusion_steps();
  c.fixed_variance = r.sampling.head_variance == HeadVariance::Fixed;
  set_seed_and_cspd(c, r);
  return c;
}

ContinuousResult run_continuous(const model::ContinuousBundle& m, const std::string& prompt,
                                const DecodeRequest& r, const ContinuousCallback& on_step,
                                const std::atomic<bool>* cancel) {
  check_continuous_request(m, r);
  const auto s = continuous_settings(m, r);
  const bool cfg = s.cfg != 1.0;
  const auto cond = model::make_condition(m.target->backbone(), m.vocab, prompt, cfg);
  if (r.method.method == Method::Ar)
    return generate_continuous_ar(*m.target, cond, s, on_step, cancel);
  const auto draft_cond = model::make_condition(m.draft->backbone(), m.vocab, prompt, cfg);
  return generate_cspd(*m.target, *m.draft, cond, draft_cond, s, on_step, cancel);
}

DecodeRequest default_continuous_request(const model::ContinuousBundle& m, Method method) {
  DecodeRequest r;
  r.method.method = method;
  r.sampling.cfg_scale = m.default_cfg();
  r.sampling.temperature = m.default_temperature();
  r.sampling.diffusion_steps = m.default_diffusion_steps();
  r.sampling.head_variance =
      m.default_fixed_variance() ? HeadVariance::Fixed : HeadVariance::Learned;
  r.method.cspd.gamma = m.default_gamma();
  r.method.cspd.prefill_ratio = m.default_prefill_ratio();
  r.method.cspd.inner_temperature = m.default_inner_temperature();
  return r;
}

}  // namespace adtree::decode
