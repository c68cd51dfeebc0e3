// The engine's side of the model-family seam for MAR models (issue "MAR checkpoints"): describing
// a loaded MAR model as a front end needs it (ModelInfo: token_kind "vectors", classes as
// prompts), and running one generation job on it through run_vector_job (engine/vector_jobs.h):
// its tokens arrive in MAR's random order, so every preview names the cells it shows.
#pragma once
#include <atomic>
#include <functional>

#include "decode/settings/method.h"
#include "engine/events.h"
#include "engine/vector_jobs.h"
#include "model/mar/mar_dir.h"

namespace adtree::engine {

// `dtype`: as the load asked.
ModelInfo describe_mar(const model::MarBundle& m, const std::string& dtype);

VectorJobModel mar_job_model(const model::MarBundle& m);

// Emits the job's events through `emit`, the terminal one included; never throws.
void run_mar_job(const model::MarBundle& m, JobId id, const std::string& prompt,
                 const decode::DecodeRequest& request, const std::atomic<bool>* cancel,
                 PreviewPolicy previews, const std::function<void(Event)>& emit);

}  // namespace adtree::engine
