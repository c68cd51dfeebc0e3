#include "engine/picture_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>

#include "decode/run.h"
#include "engine/engine.h"
#include "engine/event_queue.h"
#include "engine/soak.h"
#include "model/llamagen/vq.h"
#include "model/prompt_condition.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::engine {

namespace {

rusage usage_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u;
}

double safetensors_mib(const std::string& dir) {
  double bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".safetensors")
      bytes += double(e.file_size());
  }
  return bytes / (1024.0 * 1024.0);
}

double step_ms(const decode::StepRecord& r) {
  return r.t_draft_ms + r.t_verify_ms + r.t_sample_ms + r.t_other_ms;
}

// What a finished run says about itself: the prefill and the decoding loop.
void fill_from_stats(const decode::RunStats& s, PictureTiming& t) {
  t.tokens_ms = s.summary.wall_ms;
  t.first_step_ms = s.steps.empty() ? 0 : step_ms(s.steps.front());
}

}  // namespace

nlohmann::json LoadTiming::to_json() const {
  return {{"ms", ms},
          {"rss_mib", rss_mib},
          {"peak_rss_mib", peak_rss_mib},
          {"weights_mib", weights_mib},
          {"rss_over_weights", weights_mib > 0 ? rss_mib / weights_mib : 0.0},
          {"minor_faults", minor_faults},
          {"major_faults", major_faults}};
}

nlohmann::json PictureTiming::to_json() const {
  return {{"path", path},
          {"prompt", prompt},
          {"seed", seed},
          {"first_step_ms", first_step_ms},
          {"tokens_ms", tokens_ms},
          {"final_decode_ms", final_decode_ms},
          {"picture_ms", picture_ms},
          {"previews", previews},
          {"preview_ms", preview_ms},
          {"preview_max_ms", preview_max_ms}};
}

LoadTiming time_load(const std::string& dir, const model::LoadOptions& opts,
                     model::ModelBundle* out) {
  LoadTiming t;
  const rusage before = usage_now();
  const auto t0 = Clock::now();
  *out = model::load_model_dir(dir, opts);
  t.ms = ms_since(t0);
  const rusage after = usage_now();
  t.rss_mib = resident_mib();
  t.peak_rss_mib = double(after.ru_maxrss) / 1024.0;
  t.weights_mib = safetensors_mib(dir);
  t.minor_faults = after.ru_minflt - before.ru_minflt;
  t.major_faults = after.ru_majflt - before.ru_majflt;
  return t;
}

PictureTiming time_cli_picture(const model::ModelBundle& m, const model::LoadOptions& where,
                               const std::string& prompt, const decode::DecodeRequest& request) {
  if (!m.vq) throw Error("the picture bench needs the model's VQ decoder");
  PictureTiming t{"cli", prompt, request.seed};
  const auto t0 = Clock::now();
  const auto run = decode::prepare_run(m, request, prompt, where);
  const auto cond = model::condition_for_prompt(m, prompt, request.sampling.uses_cfg());
  const auto res = decode::run_decode(m, cond, run);
  fill_from_stats(res.stats, t);
  const auto t1 = Clock::now();
  const auto& g = m.gpt_config;
  const auto idx = at::tensor(res.tokens, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
  const auto bytes = model::VqModel::to_bytes(
      model::decode_picture(m, idx.to(m.gpt->device()), g.grid_h, g.grid_w));
  t.final_decode_ms = ms_since(t1);
  t.picture_ms = ms_since(t0);
  return t;
}

EnginePictures time_engine_pictures(
    const std::string& dir, const model::LoadOptions& opts,
    const std::vector<std::pair<std::string, decode::DecodeRequest>>& jobs,
    double preview_interval_ms, double timeout_s) {
  EngineOptions eo;
  eo.background_palette = false;  // the jobs alone are timed
  eo.previews = preview_interval_ms > 0;
  if (eo.previews) eo.preview_interval_ms = preview_interval_ms;
  EventQueue events;
  Engine engine([&](Event e) { events.push(std::move(e)); }, eo);
  EnginePictures out;
  engine.load_model({dir, opts.device, opts.dtype, opts.vq_dtype});
  for (Event e;;) {
    if (!events.pop(e, timeout_s)) throw Error("picture bench: the model did not load in time");
    if (auto* ok = std::get_if<ModelLoaded>(&e)) {
      out.load_ms = ok->load_ms;
      break;
    }
    if (auto* bad = std::get_if<LoadFailed>(&e)) throw Error(bad->message);
  }
  for (const auto& [prompt, request] : jobs) {
    PictureTiming t{"engine", prompt, request.seed};
    const JobId id = engine.submit({prompt, request});
    for (bool ended = false; !ended;) {
      Event e;
      if (!events.pop(e, timeout_s)) throw Error("picture bench: a job did not end in time");
      if (job_of(e) != id) continue;
      if (auto* p = std::get_if<JobPreview>(&e)) {
        if (p->final) {
          t.final_decode_ms = p->decode_ms;
        } else {
          ++t.previews;
          t.preview_ms += p->decode_ms;
          t.preview_max_ms = std::max(t.preview_max_ms, p->decode_ms);
        }
      } else if (auto* f = std::get_if<JobFinished>(&e)) {
        fill_from_stats(*f->stats, t);
        t.picture_ms = f->elapsed_ms;
        ended = true;
      } else if (auto* bad = std::get_if<JobFailed>(&e)) {
        throw Error("picture bench: " + bad->message);
      } else if (std::holds_alternative<JobCancelled>(e)) {
        throw Error("picture bench: a job was cancelled");
      }
    }
    out.pictures.push_back(t);
  }
  engine.shutdown();
  return out;
}

}  // namespace adtree::engine
