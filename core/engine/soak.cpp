#include "engine/soak.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <ostream>

#include "decode/settings/method_table.h"
#include "decode/settings/setting.h"
#include "engine/engine.h"
#include "engine/event_queue.h"
#include "model/conditioning.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/rng.h"

namespace adtree::engine {
namespace {

size_t pick(Rng& rng, size_t n) {
  return size_t(rng.uniform() * double(n)) % n;
}

// A prompt of 1-3 words of the model's vocabulary (class models: one class name).
std::string random_prompt(Rng& rng, const ModelInfo& info) {
  const auto& words = info.vocabulary;
  if (words.empty()) return "";
  if (info.vocabulary_is_classes) return words[pick(rng, words.size())];
  std::string p;
  const size_t n = 1 + pick(rng, 3);
  for (size_t i = 0; i < n; ++i) p += (i ? " " : "") + words[pick(rng, words.size())];
  return p;
}

// Settings that vary what the engine exercises: greedy and sampled, CFG on and off, top-k,
// LANTERN or CASCADE on tree methods, ADT modes, small and large trees, PJD's row offsets.
decode::DecodeRequest random_request(Rng& rng, decode::Method method, const ModelInfo& info,
                                     uint64_t seed) {
  using decode::Method;
  decode::DecodeRequest r;
  r.seed = seed;
  r.method.method = method;
  r.sampling = info.default_sampling;
  // The table's variations, in its order (greedy, CFG off, top-k among the sampling; the
  // acceptance rule drawn before CASCADE's thresholds, which only a CASCADE request reads).
  for (const auto& s : decode::settings_table()) {
    if (s.soak_values.empty() || !s.read_by(r.method) || rng.uniform() < 0.5) continue;
    s.set(r, s.soak_values[pick(rng, s.soak_values.size())]);
  }
  decode::fit_to_model(r, {info.codebook_size, info.grid_h * info.grid_w});
  return r;
}

}  // namespace

double resident_mib() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (!(f >> pages_total >> pages_resident)) return 0.0;
  return double(pages_resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

nlohmann::json SoakReport::to_json() const {
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& s : samples)
    curve.push_back({{"run", s.run}, {"rss_mib", s.rss_mib}, {"elapsed_s", s.elapsed_s}});
  return {{"finished", finished}, {"cancelled", cancelled},
          {"failed", failed},     {"failures", failures},
          {"rss_curve", curve},   {"growth_after_warmup", growth_after_warmup}};
}

SoakReport run_soak(const SoakOptions& opts, std::ostream* progress) {
  if (opts.runs <= 0 || opts.every <= 0) throw Error("soak: runs and every must be positive");
  if (opts.methods.empty()) throw Error("soak: no methods to run");
  EventQueue events;
  Engine engine([&](Event e) { events.push(std::move(e)); });
  engine.load_model({opts.model_dir});
  ModelInfo info;
  for (Event e;;) {
    if (!events.pop(e, opts.job_timeout_s)) throw Error("soak: the model did not load in time");
    if (auto* ok = std::get_if<ModelLoaded>(&e)) {
      info = ok->info;
      break;
    }
    if (auto* bad = std::get_if<LoadFailed>(&e)) throw Error("soak: " + bad->message);
  }

  Rng rng(opts.seed);
  SoakReport report;
  const auto t0 = Clock::now();
  double warm_rss = 0;
  for (int64_t run = 0; run < opts.runs; ++run) {
    const auto& method = opts.methods[size_t(run) % opts.methods.size()];
    const auto request = random_request(rng, decode::method_from_string(method), info,
                                        opts.seed * 1000003 + uint64_t(run));
    const bool cancel = rng.uniform() < opts.cancel_share;
    const int64_t cancel_after =
        1 + int64_t(pick(rng, 6));  // steps: early, so short jobs count too
    const JobId id = engine.submit({random_prompt(rng, info), request});
    int64_t steps = 0;
    for (bool ended = false; !ended;) {
      Event e;
      if (!events.pop(e, opts.job_timeout_s)) {
        throw Error("soak: job " + std::to_string(run) + " (" + method + ") did not end within " +
                    std::to_string(int(opts.job_timeout_s)) + " s");
      }
      if (job_of(e) != id) continue;
      if (std::holds_alternative<JobStep>(e) && cancel && ++steps == cancel_after)
        engine.cancel(id);
      if (std::holds_alternative<JobFinished>(e)) {
        ++report.finished;
        ended = true;
      } else if (std::holds_alternative<JobCancelled>(e)) {
        ++report.cancelled;
        ended = true;
      } else if (auto* f = std::get_if<JobFailed>(&e)) {
        ++report.failed;
        if (report.failures.size() < 5) report.failures.push_back(method + ": " + f->message);
        ended = true;
      }
    }
    const int64_t done = run + 1;
    if (done % opts.every == 0 || done == opts.runs) {
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      report.samples.push_back({done, resident_mib(), secs});
      if (warm_rss == 0 && done >= opts.warmup) warm_rss = report.samples.back().rss_mib;
      if (progress) {
        *progress << "soak " << done << "/" << opts.runs << ": RSS "
                  << report.samples.back().rss_mib << " MiB, " << report.finished << " finished, "
                  << report.cancelled << " cancelled, " << report.failed << " failed, " << secs
                  << " s" << std::endl;
      }
    }
  }
  engine.shutdown();
  if (warm_rss > 0)
    report.growth_after_warmup = (report.samples.back().rss_mib - warm_rss) / warm_rss;
  return report;
}

}  // namespace adtree::engine
