// One MAR model in a decode (issue "MAR checkpoints"): its class embedding (and CFG's null class),
// its head's schedule for the run, and the two calls a decoder makes: the backbone's head
// conditions for some positions given the tokens known so far (a full recompute: MAR's encoder
// and decoder are bidirectional, nothing is cached), and the head on those conditions from given
// noises. AR and CSpD's draft and target are each one stepper.
#pragma once
#include <ATen/ATen.h>

#include <memory>

#include "decode/continuous/continuous_run.h"
#include "model/continuous/head_sampler.h"
#include "model/continuous/lean_head.h"
#include "model/mar/mar_dir.h"

namespace adtree::decode {

class MarStepper {
 public:
  // label: a class id (-1: the null class). s: cfg (1: no guidance), temperature, the head's
  // steps (0: the model's) and variance.
  MarStepper(const model::MarModel& m, int64_t label, const ContinuousSettings& s);

  int steps() const { return schedule_.sample_steps(); }
  bool guided() const { return guided_; }

  struct Conditions {
    at::Tensor z, z_uncond;  // [n, Dd]; z_uncond undefined without CFG
  };
  // tokens [N, D] (raster), known [N] bool; positions [n] long -> their head conditions.
  Conditions conditions(const at::Tensor& tokens, const at::Tensor& known,
                        const at::Tensor& positions) const;
  // The head at guidance `cfg` from noises [n, K + 1, D] ([:, 0] x_T). `last_noise` false: no
  // noise on the last reverse step (MAR's sampler: x0 is that step's mean); true: x0 is drawn from
  // the last step's Gaussian (CSpD judges that density).
  model::HeadTrajectory head(const Conditions& c, double cfg, const at::Tensor& noise,
                             bool last_noise) const;

 private:
  const model::MarModel& m_;
  model::DiffusionSchedule schedule_;
  double temperature_;
  bool guided_;
  at::Tensor cls_;  // [1 or 2, E]: the class's embedding (and the null class's with CFG)
  std::shared_ptr<const model::LeanHead> lean_;
};

}  // namespace adtree::decode
