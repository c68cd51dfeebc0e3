// The engine service (ARCHITECTURE.md "Threading"): one worker thread owns the loaded model and
// runs model loads and generation jobs one at a time from a FIFO queue (a helper thread only
// decodes preview images for it). Callers never wait on the model: every result comes back as an
// Event through the listener, called on the worker thread (a GUI marshals it onto its own thread;
// see ui/window/engine_bridge.h).
//
//   Engine e(listener);
//   e.load_model(dir);                       // -> LoadProgress*, ModelLoaded | LoadFailed
//   JobId id = e.submit({prompt, request});  // -> JobStarted, JobStep*, JobPreview*, terminal
//   event e.cancel(id);                            // effective before the job's next decoding step
//   e.shutdown();                            // cancels, joins; no event after it returns
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "decode/settings/method.h"
#include "engine/events.h"

namespace adtree::engine {

struct LoadRequest {
  std::string dir;
  std::string device = "cpu";     // "cpu" | "cuda" | "cuda:N"
  std::string dtype = "fp32";     // "fp32" | "bf16" | "fp16"
  std::string vq_dtype = "auto";  // the picture decoder on the CPU (model::LoadOptions::vq_dtype)
  // When `dir` holds no model.json, first write a randomly initialised model of this GPT size there
  // ("tiny", ...; empty = never). Lets a first start work with no trained model installed.
  std::string create_random = "";
  // A T5 directory for a LlamaGen t2i model's typed prompts (model::LoadOptions::text_encoder);
  // other models ignore it, so a front end may pass the one it remembers with every load.
  std::string text_encoder = "";
};

struct GenerateJob {
  std::string prompt;
  decode::DecodeRequest request;
};

struct EngineOptions {
  bool previews = true;
  // Previews are VQ decodes of the partial grid on a second thread (so decoding does not wait for
  // them), at most one per interval, never more than one in flight, and spaced so that the preview
  // thread is busy at most ~15% of the time. Their results are emitted by
  // the decoding thread at its next step, keeping every event of a job on one thread, in order.
  double preview_interval_ms = 100;
  // Token colours (ModelInfo::token_colors) are decoded at load when that takes at most this long;
  // otherwise they come from the cache, or are decoded while the engine is idle and sent as a
  // TokenColors event (engine/token_palette.h).
  double palette_budget_ms = 3000;
  // The cache's root folder (token colours, packed weights); empty: $XDG_CACHE_HOME or ~/.cache.
  std::string cache_root;
  bool background_palette = true;  // false: no idle-time build (benches that time jobs alone)
};

// Called on the worker thread for every event, in order. Keep it short (copy and post); it must not
// call Engine::shutdown(). Exceptions it throws are caught and dropped.
using Listener = std::function<void(Event)>;

class Engine {
 public:
  explicit Engine(Listener listener, EngineOptions opts = {});
  ~Engine();  // shutdown()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a model load. A failed load keeps the model that was loaded before.
  void load_model(LoadRequest request);
  // Queues a generation job on the current model; returns its id (0 after shutdown).
  JobId submit(GenerateJob job);
  // Cancels a queued or running job: a running one stops before its next step and ends with
  // JobCancelled; a queued one ends with JobCancelled without starting. False if the id is unknown
  // or already finished.
  bool cancel(JobId id);
  // Cancels everything, waits for the worker to stop (within one decoding step). Events for the
  // cancelled jobs may still fire during the call, none after it. Idempotent.
  void shutdown();

  // Devices this build and machine can load on: always "cpu", plus "cuda" where available.
  static std::vector<std::string> available_devices();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace adtree::engine
