// The one entry point that runs any method on a loaded model: the engine, the CLI and the bench
// call this, never a method's loop directly.
#pragma once
#include <atomic>

#include "decode/ar_sampler.h"
#include "decode/method.h"
#include "model/model_dir.h"

namespace adtree::decode {

// `cond` is the batch [cond; uncond] when the sampling uses CFG (model::make_condition does that).
// Throws adtree::Error for invalid settings or a method the model cannot run (no drafter).
DecodeResult run_decode(const model::ModelBundle& model, const model::Condition& cond,
                        const DecodeRequest& request, const StepCallback& on_step = {},
                        const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::decode
