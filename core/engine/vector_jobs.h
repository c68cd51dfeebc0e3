// One generation job on a vector-token model, whichever family (issue "CSpD", part 1; issue
// "MAR checkpoints"): the same events as any other job (JobStarted, JobStep per step with its
// vectors, JobPreview of the VAE-decoded tokens so far, then exactly one terminal event). A family
// says what differs (engine/continuous_jobs.h: tokens in raster order; engine/mar_jobs.h: in a
// random order, so a preview names its cells).
#pragma once
#include <ATen/ATen.h>

#include <atomic>
#include <functional>
#include <string>

#include "decode/continuous/continuous_run.h"
#include "decode/settings/method.h"
#include "engine/events.h"

namespace adtree::engine {

// What a job needs of a vector-token model.
struct VectorJobModel {
  std::string dir, name;
  int64_t grid_h = 0, grid_w = 0, factor = 0, token_dim = 0;
  bool raster = true;  // tokens arrive in raster order (else in any: previews list their cells)
  // tokens [N, D] (raster; zeros where nothing is generated yet) -> uint8 [H, W, 3]
  std::function<at::Tensor(const at::Tensor&)> picture;
  // Throws adtree::Error for a request the model cannot run (before JobStarted).
  std::function<void(const decode::DecodeRequest&)> check;
  std::function<decode::ContinuousResult(const std::string& prompt, const decode::DecodeRequest&,
                                         const decode::ContinuousCallback&,
                                         const std::atomic<bool>*)>
      run;
};

// How a job's previews are made: none, or at most one per interval (and at most a sixth of the
// time: each costs a VAE decode on the decoding thread).
struct PreviewPolicy {
  bool enabled = true;
  double interval_ms = 100;
};

// Emits the job's events through `emit`, the terminal one included; never throws.
void run_vector_job(const VectorJobModel& m, JobId id, const std::string& prompt,
                    const decode::DecodeRequest& request, const std::atomic<bool>* cancel,
                    PreviewPolicy previews, const std::function<void(Event)>& emit);

}  // namespace adtree::engine
