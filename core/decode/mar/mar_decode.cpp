#include "decode/mar/mar_decode.h"

#include "decode/mar/mar_decoder.h"
#include "decode/settings/method_table.h"
#include "util/error.h"
#include "util/json_int.h"

namespace adtree::decode {

void check_mar_request(const model::MarBundle& m, const DecodeRequest& r) {
  const auto& c = m.target.backbone->config();
  validate_settings(r.method, r.sampling, 0, c.seq_len());
  const auto method = r.method.method;
  if (!runs_on(method, TokenKind::Vectors))
    throw Error("method '" + to_string(method) +
                "' runs on VQ codes; a MAR model's tokens are vectors: use ar or cspd");
  if (method == Method::Cspd && !m.has_draft())
    throw Error("cspd needs a draft model, and " + m.dir +
                " has none (convert one with --mar-draft)");
  const auto& s = r.sampling;
  if (s.greedy())
    throw Error(
        "a MAR model samples its tokens from a diffusion head: the temperature must be above 0 "
        "(there is no most likely token)");
  if (s.top_k != 0 || s.top_p != 1.0)
    throw Error("top-k and top-p filter a codebook's distribution; a MAR model has none");
  if (s.cfg_interval != -1)
    throw Error(
        "a MAR model guides every step (no --cfg-interval; --cfg-schedule linear ramps "
        "the scale)");
  check_token_kind(s, TokenKind::Vectors);
  if (s.num_iter > c.seq_len())
    throw Error("--num-iter " + std::to_string(s.num_iter) + ": num_iter is at most the " +
                std::to_string(c.seq_len()) + " image tokens (one a step)");
  if (s.diffusion_steps > c.train_steps)
    throw Error("--diffusion-steps " + std::to_string(s.diffusion_steps) + " is more than the " +
                std::to_string(c.train_steps) + " steps the head was trained on");
}

ContinuousSettings mar_settings(const model::MarBundle& m, const DecodeRequest& r) {
  const auto d = default_mar_request(m, r.method.method);
  ContinuousSettings c;
  c.cfg = r.sampling.cfg_scale;
  c.cfg_linear = r.sampling.cfg_schedule == CfgSchedule::Linear;
  c.temperature = r.sampling.temperature;
  c.diffusion_steps = int(r.sampling.diffusion_steps);
  c.fixed_variance = r.sampling.head_variance == HeadVariance::Fixed;
  c.num_iter = int(r.sampling.num_iter > 0 ? r.sampling.num_iter : d.sampling.num_iter);
  set_seed_and_cspd(c, r);
  return c;
}

int64_t mar_class(const model::MarBundle& m, const std::string& prompt) {
  return m.classes.class_id(prompt);
}

ContinuousResult run_mar(const model::MarBundle& m, const std::string& prompt,
                         const DecodeRequest& r, const ContinuousCallback& on_step,
                         const std::atomic<bool>* cancel) {
  check_mar_request(m, r);
  const auto s = mar_settings(m, r);
  const int64_t label = mar_class(m, prompt);
  if (r.method.method == Method::Ar) return generate_mar_ar(m.target, label, s, on_step, cancel);
  return generate_mar_cspd(m.target, m.draft, label, s, on_step, cancel);
}

DecodeRequest default_mar_request(const model::MarBundle& m, Method method) {
  using nlohmann::json;
  const auto s = m.manifest.value("sampling", json::object());
  const auto c = m.manifest.value("cspd", json::object());
  DecodeRequest r;
  r.method.method = method;
  const int64_t n = m.target.backbone->config().seq_len();
  r.sampling.num_iter = json_int<int64_t>(s, "num_iter", std::min<int64_t>(64, n));
  if (r.sampling.num_iter < 1 || r.sampling.num_iter > n)
    throw Error(m.dir + "/model.json: sampling.num_iter must be in 1.." + std::to_string(n));
  r.sampling.cfg_scale = json_field(s, "cfg", 1.0);
  r.sampling.cfg_schedule =
      cfg_schedule_from_string(json_field(s, "cfg_schedule", std::string("linear")));
  r.sampling.temperature = json_field(s, "temperature", 1.0);
  r.sampling.diffusion_steps = json_int<int64_t>(s, "diffusion_steps", 0);
  r.sampling.head_variance =
      head_variance_from_string(json_field(s, "head_variance", std::string("learned")));
  r.method.cspd.gamma = json_int<int64_t>(c, "gamma", 4);
  r.method.cspd.prefill_ratio = json_field(c, "prefill_ratio", 0.05);
  r.method.cspd.inner_temperature = json_field(c, "inner_temperature", 1.0);
  return r;
}

}  // namespace adtree::decode
