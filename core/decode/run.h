// The one entry point that runs any method on a loaded model: the engine, the CLI and the bench
// call this, never a method's loop directly.
#pragma once
#include <atomic>

#include "decode/ar_sampler.h"
#include "decode/settings/method.h"
#include "decode/settings/run_settings.h"
#include "model/model_dir.h"

namespace adtree::decode {

// What stats.settings.ran_as_ar says when ADT-Tree's cost rule ran plain AR because no block
// of drafts costs less per token than a one-token step on the device's curve (drafts_can_pay).
inline constexpr const char* kNoTreePays =
    "no block of drafts costs less per token than a one-token step on this cost curve, so no tree "
    "can pay: ADT-Tree ran as AR";

// The checks every entry point makes before a generation: the settings and sampling against the
// model (validate_settings), and a draft head where the method needs one. Throws adtree::Error.
void check_request(const model::ModelBundle& model, const DecodeRequest& request);

// `cond` is the batch [cond; uncond] when the sampling uses CFG (model::make_condition does that).
// Throws adtree::Error for invalid settings or a method the model cannot run (no drafter).
DecodeResult run_decode(const model::ModelBundle& model, const model::Condition& cond,
                        const DecodeRequest& request, const StepCallback& on_step = {},
                        const std::atomic<bool>* cancel = nullptr);

// A generation's settings before it runs, made in this one place for every front end that makes
// pictures (the engine, `adtree generate`): the request checked against the model (settings,
// sampling, a draft head where the method needs one), the prompt, the model's identity and where
// it runs. Throws adtree::Error naming what is wrong.
RunSettings prepare_run(const model::ModelBundle& model, const DecodeRequest& request,
                        const std::string& prompt, const model::LoadOptions& where);

// The prompt's condition for prepared settings (model/prompt_condition.h), with how a typed prompt
// was encoded recorded in `run` (text encoder, its hash, tokens, truncation, time).
model::Condition prepare_condition(const model::ModelBundle& model, RunSettings& run);

// run_decode on prepared settings (checked by prepare_run, not again): the result's settings carry
// the prompt, model and device too.
DecodeResult run_decode(const model::ModelBundle& model, const model::Condition& cond,
                        const RunSettings& run, const StepCallback& on_step = {},
                        const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::decode
