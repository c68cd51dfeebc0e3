// What a picture of the continuous family is made from and what it reports (issue "CSpD", parts 3
// and 5): the run's settings, the noises every method shares, the per-token record and the time
// split. AR (continuous_ar.h) and CSpD (cspd_decoder.h) fill the same result, so the bench, the
// CLI and the studio read one shape.
//
// Every position i owns its noises: x_T and one eps per reverse step, drawn once from the seed
// (TrajectoryNoise). AR and CSpD's draft and target all denoise position i from them (CSpD's
// "trajectory alignment"), so a CSpD run whose draft is the target itself emits AR's picture.
#pragma once
#include <ATen/ATen.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "decode/stats/stats.h"

namespace adtree::decode {

struct ContinuousSettings {
  double cfg = 3.0;             // classifier-free guidance on the head's epsilon (1: none)
  double temperature = 1.0;     // scales every reverse step's std (MAR's)
  int diffusion_steps = 0;      // reverse steps of the head; 0: the model's sample_steps
  bool fixed_variance = false;  // each step's std beta~_t, not the head's learned one
  // MAR models: the masking schedule's steps and CFG's schedule (linear in the share generated)
  int num_iter = 0;
  bool cfg_linear = false;
  uint64_t seed = 0;
  // CSpD
  int gamma = 4;                   // tokens the draft proposes per round
  double prefill_ratio = 0.05;     // share of the first tokens the target makes alone
  int max_residual_tries = 100;    // residual proposals before the target's own sample stands in
  double inner_temperature = 1.0;  // last-step Gaussians widened by this in the test alone
                                   // (lossy > 1); the residual draws from the unwidened ones
};

struct DecodeRequest;
// The request's seed and CSpD settings (gamma, pre-fill, residual tries, inner temperature) into
// `c`: what every vector family reads alike.
void set_seed_and_cspd(ContinuousSettings& c, const DecodeRequest& r);

// The noises of every position: [N, K + 1, D]; [:, 0] is x_T, [:, 1 + s] the eps of step s.
at::Tensor trajectory_noise(uint64_t seed, int64_t positions, int steps, int64_t dim);

// How a token came to be.
enum class ContinuousOrigin : uint8_t { Target, Accepted, Resampled, Bonus };

struct ContinuousTiming {  // milliseconds
  double draft_backbone = 0, draft_head = 0, target_backbone = 0, target_head = 0, resample = 0;
  double total = 0;
};

struct ContinuousResult {
  at::Tensor tokens;                     // [n, D] fp32, raster order (n < N only when cancelled)
  std::vector<ContinuousOrigin> origin;  // per token
  std::vector<int> round;                // per token: the round that emitted it (-1: pre-fill / AR)
  std::vector<double> accept_prob;       // per token: min(1, r) of its draft (NaN: not drafted)
  // Per token, where a draft was judged (NaN elsewhere): log r, and log S, its part from the steps
  // before the last (log r - log S is the last step's): where min(1, r) underflows to 0 they
  // still say why (docs/cspd.md).
  std::vector<double> log_ratio, log_s;
  int64_t rounds = 0, drafted = 0, accepted = 0, resampled = 0, exhausted = 0;
  ContinuousTiming timing;
  bool cancelled = false;
  // The steps and cell maps in every method's format (decode/stats/stats.h), so the run files, the
  // studio's maps and the summaries read a continuous run as any other: a step is an AR token or a
  // CSpD round (drafted gamma, committed a + 1, alpha a / gamma); a cell's depth is its draft
  // position (0: the target's own), and its top1 the draft's acceptance probability min(1, r) (0
  // where nothing was drafted: a continuous head has no top-1 probability).
  RunStats stats;

  // Accepted drafts per drafted token (CSpD's alpha).
  double acceptance() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  // Tokens per target forward after the pre-fill (tau).
  double tokens_per_round() const;
};

// The record a run's statistics file and the bench keep: the counts, acceptance, tau, the time
// split and, with `per_token`, every token's origin, round, acceptance probability, log r and
// log S.
nlohmann::json to_json(const ContinuousResult& r, bool per_token = true);
std::string to_string(ContinuousOrigin o);

// Heard after every step (an AR token, a CSpD round): its record and cells as any method's (the
// event's codes are zeros: a continuous token is a vector) and its tokens [q, D].
using ContinuousCallback = std::function<void(const StepEvent& event, const at::Tensor& tokens)>;

// Appends one step to r.stats (its cells into the grids) and tells `on_step`.
void record_step(ContinuousResult& r, StepRecord rec, const std::vector<CellStats>& cells,
                 const at::Tensor& tokens, const ContinuousCallback& on_step);

}  // namespace adtree::decode
