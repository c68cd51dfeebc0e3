// The one entry point that runs a method on a continuous-family model (issue "CSpD", part 1), as
// decode/run.h is for the LlamaGen family: the request's settings (the same settings table: the
// sampling's cfg, temperature and diffusion steps, the cspd.* entries) checked against the model,
// the prompt's conditions for the target and the draft, then AR or CSpD.
#pragma once
#include <atomic>
#include <string>

#include "decode/continuous/continuous_run.h"
#include "decode/settings/method.h"
#include "model/continuous/continuous_dir.h"

namespace adtree::decode {

// Throws adtree::Error naming what this model or this family cannot do: a method that runs on
// codes, CSpD without a draft model, greedy sampling (a diffusion head has no argmax), top-k/top-p
// (no vocabulary), a CFG schedule other than constant.
void check_continuous_request(const model::ContinuousBundle& m, const DecodeRequest& r);

// The decoders' settings from a checked request.
ContinuousSettings continuous_settings(const model::ContinuousBundle& m, const DecodeRequest& r);

// Checks, conditions the models on `prompt` (unknown words are an error naming them) and runs.
ContinuousResult run_continuous(const model::ContinuousBundle& m, const std::string& prompt,
                                const DecodeRequest& r, const ContinuousCallback& on_step = {},
                                const std::atomic<bool>* cancel = nullptr);

// The request a continuous model runs by default: its model.json sampling and CSpD settings.
DecodeRequest default_continuous_request(const model::ContinuousBundle& m, Method method);

}  // namespace adtree::decode
