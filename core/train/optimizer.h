// The optimisation every trainer shares: the trainable tensors, AdamW with weight decay on
// matrices only, gradient clipping and the learning-rate schedule.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <set>
#include <string>

#include "model/params.h"

namespace adtree::train {

using model::TensorMap;

// The trainable tensors of a run, by name (fp32, requires_grad). Same map the model classes take.
struct Params {
  TensorMap tensors;
  // Copies to `device`, fp32, contiguous, requires_grad.
  static Params from(const TensorMap& init, at::Device device = at::kCPU);
  int64_t count() const;
  at::Device device() const;  // where the tensors live (the CPU for an empty map)
  void zero_grad();
  // One tensor map without autograd history (for saving weights).
  TensorMap detached() const;
};

struct AdamWConfig {
  double lr = 3e-4;
  double beta1 = 0.9, beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.05;
};

// AdamW (decoupled weight decay, bias-corrected moments: the same update as torch.optim.AdamW).
// Written out rather than taken from torch::optim so its state is plain named tensors that go
// into a safetensors checkpoint, identically on libtorch 1.13 and 2.x (whose optimiser state maps
// are keyed differently). Weight decay applies to matrices (dim >= 2) only: LlamaGen's rule;
// norms, biases and the stored null caption are not pulled towards zero.
class AdamW {
 public:
  // `no_decay`: matrices exempt from weight decay (e.g. an L2-normalised codebook, whose rows'
  // length carries no meaning, so decay would only shrink them and inflate their step size).
  AdamW(Params& params, AdamWConfig cfg, std::set<std::string> no_decay = {});
  // One update with learning rate `lr` from the gradients in params (missing grads are skipped).
  void step(double lr);
  // Moments of one parameter (e.g. to reset rows of restarted codebook entries).
  at::Tensor& exp_avg(const std::string& name) { return m_.at(name); }
  at::Tensor& exp_avg_sq(const std::string& name) { return v_.at(name); }
  // "adam.m.<name>", "adam.v.<name>" for checkpoints; load checks every name and shape.
  void save_state(TensorMap& out) const;
  void load_state(const TensorMap& in, const std::string& where);

 private:
  Params& params_;
  AdamWConfig cfg_;
  std::set<std::string> no_decay_;
  TensorMap m_, v_;
  int64_t t_ = 0;
};

// Scales gradients so their global L2 norm is at most max_norm. Returns the norm before clipping.
double clip_grad_norm(Params& params, double max_norm);

// Linear warm-up to `peak`, then cosine (or linear) decay to peak * min_ratio at `total` steps.
struct LrSchedule {
  double peak = 3e-4;
  int64_t warmup = 0;
  int64_t total = 1;
  double min_ratio = 0.1;
  std::string shape = "cosine";  // "cosine" | "linear" | "constant"
  double at(int64_t step) const;
  void validate(const std::string& what) const;
};

}  // namespace adtree::train
