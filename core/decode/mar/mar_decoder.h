// AR and CSpD on MAR models (issue "MAR checkpoints"), filling the continuous family's result
// (decode/continuous/continuous_run.h), so the bench, the CLI and the studio read one shape.
//
// Both draw from the seed one random order (mar_order) and every position's noises
// (trajectory_noise: x_T and one eps per reverse step), and follow MAR's masking schedule
// (mar_schedule.h). A step of the run's record is a schedule step (AR) or a CSpD round; its
// cells are the positions it fills, in the random order's sense, so `StepRecord::cells` lists them.
//
// AR is MAR's sample_tokens for one picture: a full backbone pass per step, the step's tokens
// from the head (no noise on the last reverse step, as MAR's sampler).
//
// CSpD as the released code runs it on MAR: a round takes the next gamma schedule steps. The
// draft runs them one by one (a backbone pass per step, its own drafts known to the next); the
// target then runs one backbone pass with only the tokens known before the round and gives every
// drafted position its condition; each drafted token is judged on its own (CSpD's rule, the last
// reverse step's Gaussians, the inner temperature) and stands or is replaced by a residual draw;
// nothing is truncated (a refusal does not discard the drafts after it, as the tokens of one MAR
// step do not condition each other). The first prefill_ratio of the tokens are the target's.
#pragma once
#include <ATen/ATen.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "decode/continuous/continuous_run.h"
#include "decode/mar/mar_schedule.h"
#include "model/mar/mar_dir.h"

namespace adtree::decode {

// A random permutation of 0..n-1 from the seed; the order's last entries are generated first.
at::Tensor mar_order(uint64_t seed, int64_t n);
// The positions a schedule step predicts: the order's entries [masked_after, masked_before),
// ascending.
at::Tensor mar_step_positions(const at::Tensor& order, const MarScheduleStep& st);
// The record of a step the target makes alone (AR's, CSpD's pre-fill): its cells `pos`, one pass.
StepRecord mar_target_step_record(const std::string& method, const at::Tensor& pos);

// tokens of the result: [N, D] in raster order (zeros where a cancelled run stopped short).
ContinuousResult generate_mar_ar(const model::MarModel& m, int64_t label,
                                 const ContinuousSettings& s,
                                 const ContinuousCallback& on_step = {},
                                 const std::atomic<bool>* cancel = nullptr);

ContinuousResult generate_mar_cspd(const model::MarModel& target, const model::MarModel& draft,
                                   int64_t label, const ContinuousSettings& s,
                                   const ContinuousCallback& on_step = {},
                                   const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::decode
