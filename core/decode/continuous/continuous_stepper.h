// One continuous-family model in a decode (issue "CSpD", part 3): its KV cache (a batch of 2 with
// CFG: [caption; null caption]), how many image tokens the cache holds, and the two calls a decoder
// makes: feed tokens through the backbone, run the head on conditions from given noises. AR, and
// CSpD's draft and target, are each one stepper.
#pragma once
#include <ATen/ATen.h>

#include "decode/continuous/continuous_run.h"
#include "model/continuous/continuous_gpt.h"
#include "model/continuous/head_sampler.h"
#include "model/continuous/lean_head.h"

#include <memory>

namespace adtree::decode {

class ContinuousStepper {
 public:
  // `cond`: the batch [caption; null] when settings.cfg != 1, else the caption alone.
  ContinuousStepper(const model::ContinuousGpt& m, const model::Condition& cond,
                    const ContinuousSettings& s);

  int64_t fed() const { return fed_; }  // image tokens committed to the cache
  int steps() const { return schedule_.sample_steps(); }

  // Feeds `tokens` [q, D] (image indices fed() .. fed()+q-1) as pending rows; returns their
  // outputs [q, dim] (row j conditions token fed()+j+1) and the null caption's (undefined
  // without CFG). With no tokens: the condition of token fed() (only right after the prefill).
  struct Conditions {
    at::Tensor z, z_uncond;
  };
  Conditions feed(const at::Tensor& tokens);
  // Keeps the first `rows` pending rows as committed image tokens, drops the rest.
  void keep(int64_t rows);
  // Drops committed image tokens beyond `tokens`.
  void truncate(int64_t tokens);

  // The head on conditions [B, dim] (z_uncond: with CFG) from noises [B, K + 1, D].
  model::HeadTrajectory head(const Conditions& c, const at::Tensor& noise) const;

 private:
  const model::ContinuousGpt& m_;
  model::DiffusionSchedule schedule_;
  double cfg_, temperature_;
  bool guided_;
  std::shared_ptr<const model::LeanHead> lean_;  // the lean CPU path's head (null: libtorch's)
  model::KvCache cache_;
  int64_t fed_ = 0;
  Conditions first_;  // the prefill's: the condition of token 0
};

}  // namespace adtree::decode
