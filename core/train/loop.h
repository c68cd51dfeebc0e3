// The training loop every trainer runs (run_loop) and what a trainer plugs into it (LoopSpec).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "train/config.h"
#include "train/optimizer.h"

namespace adtree::train {

// What a trainer plugs into run_loop. step_fn runs forward + backward for one step and returns the
// loss (adding the items it processed to `items`); the loop owns zeroing, clipping, the update,
// logging, evaluation, checkpoints, stopping and resuming.
struct LoopSpec {
  std::string kind;       // "vq", "gpt", "drafter"
  std::string unit;       // "img", "tok"
  nlohmann::json config;  // the resolved config: a checkpoint must match it to be resumed
  int64_t steps = 0;
  int64_t eval_every = 0;
  int64_t checkpoint_every = 0;
  LrSchedule schedule;
  double grad_clip = 1.0;
  std::function<double(int64_t step, double& items)> step_fn;
  // Evaluation after `step` steps; `final` on the last one (full validation set).
  std::function<nlohmann::json(int64_t step, bool final)> eval_fn;
  // After the update of each step (e.g. dead-code restarts); may be empty.
  std::function<void(int64_t step)> after_update;
  // Trainer state beyond params and optimiser (e.g. codebook usage counts); may be empty.
  std::function<TensorMap()> save_extra;
  std::function<void(const TensorMap&)> load_extra;
  // One short text for the progress line from the last eval (e.g. "val 3.21"); may be empty.
  std::function<std::string(const nlohmann::json&)> eval_text;

  // The schedule and loop settings every stage reads from its resolved config (steps, lr, warmup,
  // min_lr_ratio, schedule, eval_every, checkpoint_every, grad_clip); the callbacks stay empty.
  static LoopSpec from_config(const std::string& kind, const std::string& unit,
                              const nlohmann::json& config);
};

// Runs (or resumes) the loop. A loss that is not finite is an adtree::Error naming the step.
TrainResult run_loop(const TrainOptions& opts, Params& params, AdamW& opt, const LoopSpec& spec);

}  // namespace adtree::train
