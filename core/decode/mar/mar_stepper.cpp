#include "decode/mar/mar_stepper.h"

#include "util/error.h"
#include "util/heap.h"

namespace adtree::decode {

MarStepper::MarStepper(const model::MarModel& m, int64_t label, const ContinuousSettings& s)
    : m_(m),
      schedule_(m.backbone->config().train_steps,
                s.diffusion_steps > 0 ? s.diffusion_steps : m.backbone->config().sample_steps),
      temperature_(s.temperature),
      guided_(s.cfg != 1.0) {
  if (!(s.temperature > 0)) throw Error("the temperature must be > 0");
  keep_allocations_on_heap();  // every pass allocates the same activations again (util/heap.h)
  if (s.fixed_variance) schedule_ = schedule_.with_fixed_variance();
  auto labels = at::full({1}, label, at::kLong);
  if (guided_) labels = at::cat({labels, at::full({1}, -1, at::kLong)});
  cls_ = m.backbone->class_embedding(labels);
  // The lean head: the same trajectory without libtorch's per-operation cost
  // (tests/model/test_lean_head.cpp).
  lean_ = std::make_shared<const model::LeanHead>(*m.head, schedule_, m.bf16);
}

MarStepper::Conditions MarStepper::conditions(const at::Tensor& tokens, const at::Tensor& known,
                                              const at::Tensor& positions) const {
  const int64_t rows = guided_ ? 2 : 1;
  const auto x = tokens.unsqueeze(0).expand({rows, tokens.size(0), tokens.size(1)});
  const auto unknown = known.logical_not().unsqueeze(0).expand({rows, known.size(0)});
  const auto z = m_.backbone->forward(x.contiguous(), unknown.contiguous(), cls_);
  Conditions c;
  c.z = z[0].index_select(0, positions).contiguous();
  if (guided_) c.z_uncond = z[1].index_select(0, positions).contiguous();
  return c;
}

model::HeadTrajectory MarStepper::head(const Conditions& c, double cfg, const at::Tensor& noise,
                                       bool last_noise) const {
  const int64_t K = schedule_.sample_steps();
  const auto x_T = noise.select(1, 0).contiguous();
  auto eps = noise.narrow(1, 1, K).contiguous();
  if (!last_noise) {
    eps = eps.clone();
    eps.select(1, K - 1).zero_();
  }
  return lean_->sample(c.z, guided_ ? c.z_uncond : at::Tensor(), guided_ ? cfg : 1.0, temperature_,
                       x_T, eps);
}

}  // namespace adtree::decode
