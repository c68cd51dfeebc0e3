// The engine's side of the model-family seam for continuous-token models (issue "CSpD", part 1):
// describing a loaded continuous model as a front end needs it (ModelInfo: token_kind "vectors"),
// and running one generation job on it with the same events as any other job (JobStarted, JobStep
// per AR token or CSpD round with its vectors, JobPreview of the VAE-decoded prefix, then exactly
// one terminal event). engine.cpp calls these where it would call the LlamaGen family's paths.
#pragma once
#include <atomic>
#include <functional>

#include "decode/settings/method.h"
#include "engine/events.h"
#include "engine/vector_jobs.h"
#include "model/continuous/continuous_dir.h"

namespace adtree::engine {

// `dtype`: as the load asked (the continuous family computes in fp32 on the CPU).
ModelInfo describe_continuous(const model::ContinuousBundle& m, const std::string& dtype);

// What run_vector_job (engine/vector_jobs.h) needs of the model: tokens in raster order.
VectorJobModel continuous_job_model(const model::ContinuousBundle& m);

// Emits the job's events through `emit`, the terminal one included; never throws.
void run_continuous_job(const model::ContinuousBundle& m, JobId id, const std::string& prompt,
                        const decode::DecodeRequest& request, const std::atomic<bool>* cancel,
                        PreviewPolicy previews, const std::function<void(Event)>& emit);

}  // namespace adtree::engine
