// The one entry point that runs a method on a MAR model (issue "MAR checkpoints"), as
// continuous_decode.h is for the continuous family: the request checked against the model (the
// settings table's sampling entries: cfg and its schedule, temperature, diffusion steps, head
// variance, num_iter; the cspd.* entries), the prompt's class, then AR or CSpD.
#pragma once
#include <atomic>
#include <string>

#include "decode/continuous/continuous_run.h"
#include "decode/settings/method.h"
#include "model/mar/mar_dir.h"

namespace adtree::decode {

// Throws adtree::Error naming what a MAR model cannot do: a method on codes, CSpD without a draft,
// greedy sampling, top-k / top-p, a CFG interval, more diffusion steps than the head was trained
// on, num_iter beyond the tokens.
void check_mar_request(const model::MarBundle& m, const DecodeRequest& r);

// The decoders' settings from a checked request (num_iter 0: the model's).
ContinuousSettings mar_settings(const model::MarBundle& m, const DecodeRequest& r);

// The class a prompt names: a number, a class name or one of its synonyms (an unknown one is an
// error naming it).
int64_t mar_class(const model::MarBundle& m, const std::string& prompt);

ContinuousResult run_mar(const model::MarBundle& m, const std::string& prompt,
                         const DecodeRequest& r, const ContinuousCallback& on_step = {},
                         const std::atomic<bool>* cancel = nullptr);

// The request a MAR model runs by default: its model.json "sampling" (num_iter, cfg,
// cfg_schedule, temperature, diffusion_steps, head_variance) and "cspd" (gamma, prefill_ratio,
// inner_temperature).
DecodeRequest default_mar_request(const model::MarBundle& m, Method method);

}  // namespace adtree::decode
