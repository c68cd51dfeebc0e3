// Soak run (reliability issue): many generations back to back through the Engine, as the GUI runs
// them (worker thread, previews on), with methods and settings mixed and some jobs cancelled at a
// random step, recording resident memory every `every` runs. A leak or a growing cache shows up as
// RSS that keeps climbing after the warm-up; a hang as a job that never ends (bounded wait).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace adtree::engine {

struct SoakOptions {
  std::string model_dir;
  int64_t runs = 1000;
  int64_t every = 50;          // RSS sample interval (runs)
  int64_t warmup = 100;        // RSS growth is measured from the first sample at or after this run
  uint64_t seed = 0;           // choice of prompts, methods, settings and cancellations
  double cancel_share = 0.1;   // share of jobs cancelled at a random step
  double job_timeout_s = 120;  // a job that has not ended by then is a hang (the run fails)
  std::vector<std::string> methods = {"ar",  "static",   "dynamic", "adt",
                                      "sjd", "pathspec", "sjd-pac", "pjd"};
};

struct SoakSample {
  int64_t run = 0;       // runs completed
  double rss_mib = 0;    // resident memory of the process
  double elapsed_s = 0;  // since the first job
};

struct SoakReport {
  int64_t finished = 0, cancelled = 0, failed = 0;
  std::vector<std::string> failures;  // the first few failure messages
  std::vector<SoakSample> samples;
  double growth_after_warmup = 0;  // (last RSS - RSS at warm-up) / RSS at warm-up
  nlohmann::json to_json() const;
};

// Resident set size of this process in MiB (/proc/self/statm); 0 where unavailable.
double resident_mib();

// Throws adtree::Error when the model does not load or a job hangs past job_timeout_s.
SoakReport run_soak(const SoakOptions& opts, std::ostream* progress = nullptr);

}  // namespace adtree::engine
