#include "decode/mar/mar_generate.h"

#include <ATen/CPUGeneratorImpl.h>

#include "decode/mar/mar_schedule.h"
#include "model/continuous/head_sampler.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

void check_mar_inputs(const MarNoise& n, int64_t b, int64_t len, int64_t k, int64_t d,
                      const MarSampling& s) {
  auto bad = [](const std::string& what) { throw Error("MAR generation: " + what); };
  if (!n.orders.defined() || n.orders.sizes() != at::IntArrayRef({b, len}))
    bad("orders must be [B, " + std::to_string(len) + "]");
  if (!n.x_T.defined() || n.x_T.sizes() != at::IntArrayRef({b, len, d}))
    bad("x_T must be [B, N, " + std::to_string(d) + "]");
  if (!n.noise.defined() || n.noise.sizes() != at::IntArrayRef({b, len, k, d}))
    bad("the noise must be [B, N, " + std::to_string(k) + ", " + std::to_string(d) + "]");
  if (!(s.temperature > 0)) bad("the temperature must be above 0");
  if (!(s.cfg >= 0)) bad("the CFG scale must be >= 0");
}

}  // namespace

MarNoise draw_mar_noise(int64_t batch, int64_t tokens, int64_t steps, int64_t dim, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed ^ 0x4d41520000000001ULL);  // "MAR"
  MarNoise n;
  std::vector<at::Tensor> orders;
  for (int64_t b = 0; b < batch; ++b) orders.push_back(at::randperm(tokens, gen, at::kLong));
  n.orders = at::stack(orders);
  n.x_T = at::randn({batch, tokens, dim}, gen);
  n.noise = at::randn({batch, tokens, steps, dim}, gen);
  return n;
}

at::Tensor mar_generate(const model::MarBackbone& backbone, const model::DiffusionHead& head,
                        const model::DiffusionSchedule& schedule, const at::Tensor& labels,
                        const MarSampling& s, const MarNoise& noise,
                        const std::function<void(const MarStepEvent&)>& on_step) {
  const auto& c = backbone.config();
  const int64_t b = labels.size(0), n = c.seq_len(), d = c.token_dim, k = schedule.sample_steps();
  check_mar_inputs(noise, b, n, k, d, s);
  const bool guided = s.cfg != 1.0;
  auto cls = backbone.class_embedding(labels);
  if (guided) cls = at::cat({cls, backbone.class_embedding(at::full({b}, -1, at::kLong))});
  // The last reverse step adds no noise (MAR's DDPM): x0 is that step's mean.
  auto steps = noise.noise.clone();
  steps.select(2, k - 1).zero_();
  auto tokens = at::zeros({b, n, d});
  auto unknown = at::ones({b, n}, at::kBool);
  const auto schedule_steps = mar_masking_schedule(n, s.num_iter, s.cfg, s.cfg_linear);
  for (int step = 0; step < s.num_iter; ++step) {
    const auto& st = schedule_steps[size_t(step)];
    const auto z =
        guided ? backbone.forward(at::cat({tokens, tokens}), at::cat({unknown, unknown}), cls)
               : backbone.forward(tokens, unknown, cls);
    auto next = at::zeros({b, n}, at::kBool);
    for (int64_t r = 0; r < b; ++r)
      next[r].index_fill_(0, noise.orders[r].narrow(0, 0, st.masked_after), true);
    const auto predict = unknown.logical_xor(next);
    const auto idx = predict.nonzero();  // [R, 2]: (row, position), row-major
    const auto rows = idx.select(1, 0), pos = idx.select(1, 1);
    auto cond = z.narrow(0, 0, b).index({rows, pos});
    at::Tensor uncond;
    if (guided) uncond = z.narrow(0, b, b).index({rows, pos});
    const auto t = model::sample_head(head, schedule, cond, uncond, st.cfg, s.temperature,
                                      noise.x_T.index({rows, pos}), steps.index({rows, pos}));
    tokens = tokens.clone();
    tokens.index_put_({rows, pos}, t.x0);
    unknown = next;
    if (on_step) {
      const int64_t per_row = idx.size(0) / b;
      on_step({step, pos.reshape({b, per_row}), t.x0.reshape({b, per_row, d})});
    }
  }
  return tokens;
}

}  // namespace adtree::decode
