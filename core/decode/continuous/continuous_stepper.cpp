#include "decode/continuous/continuous_stepper.h"

#include "util/error.h"

namespace adtree::decode {

ContinuousStepper::ContinuousStepper(const model::ContinuousGpt& m, const model::Condition& cond,
                                     const ContinuousSettings& s)
    : m_(m),
      schedule_(m.schedule_with(s.diffusion_steps > 0 ? s.diffusion_steps : m.config().sample_steps,
                                s.fixed_variance)),
      cfg_(s.cfg),
      temperature_(s.temperature),
      guided_(s.cfg != 1.0) {
  if (!(s.temperature > 0)) throw Error("the temperature must be > 0");
  const int64_t batch = guided_ ? 2 : 1;
  if (cond.batch() != batch) {
    throw Error(
        "a continuous decode with CFG needs the condition batch [caption; null], without "
        "it the caption alone");
  }
  // The lean head wherever the backbone runs the lean path (fp32 or bf16 on the CPU, $ADTREE_LEAN
  // not 0); the head's own weights are always fp32.
  if (m.backbone().lean_ready())
    lean_ = std::make_shared<const model::LeanHead>(m.head(), schedule_);
  cache_ = m.backbone().new_cache(batch, 64);
  const auto z = m.prefill(cache_, cond);  // [batch, dim]
  first_.z = z.narrow(0, 0, 1);
  if (guided_) first_.z_uncond = z.narrow(0, 1, 1);
}

ContinuousStepper::Conditions ContinuousStepper::feed(const at::Tensor& tokens) {
  if (tokens.size(0) == 0) {
    if (fed_ != 0) throw Error("feed: nothing to feed after the first token");
    return first_;
  }
  const int64_t batch = guided_ ? 2 : 1;
  auto x = tokens.unsqueeze(0).expand({batch, tokens.size(0), tokens.size(1)});
  const auto h = m_.forward_tokens(cache_, x, fed_);  // [batch, q, dim]
  Conditions c;
  c.z = h.select(0, 0);
  if (guided_) c.z_uncond = h.select(0, 1);
  return c;
}

void ContinuousStepper::keep(int64_t rows) {
  if (rows < 0 || rows > cache_.pending) throw Error("keep: more rows than the forward wrote");
  std::vector<int64_t> idx(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) idx[size_t(i)] = i;
  cache_.keep(idx);
  fed_ += rows;
}

void ContinuousStepper::truncate(int64_t tokens) {
  if (tokens >= fed_) return;
  cache_.truncate(m_.config().backbone.cond_tokens() + tokens);
  fed_ = tokens;
}

model::HeadTrajectory ContinuousStepper::head(const Conditions& c, const at::Tensor& noise) const {
  const int64_t K = schedule_.sample_steps();
  const auto x_T = noise.select(1, 0).contiguous();
  const auto eps = noise.narrow(1, 1, K).contiguous();
  const auto zu = guided_ ? c.z_uncond : at::Tensor();
  if (lean_) return lean_->sample(c.z, zu, cfg_, temperature_, x_T, eps);
  return model::sample_head(m_.head(), schedule_, c.z, zu, cfg_, temperature_, x_T, eps);
}

}  // namespace adtree::decode
