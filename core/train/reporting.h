// What a run reports while it trains: the progress line and the metrics log.
#pragma once
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

namespace adtree::train {

// Appends one JSON object per line to <out>/metrics.jsonl (truncated when a run starts afresh).
class MetricsLog {
 public:
  MetricsLog(const std::string& out_dir, bool append);
  void write(const nlohmann::json& record);

 private:
  std::ofstream out_;
};

// "gpt step 120/2000 loss 2.3456 lr 3.0e-04 5120 tok/s ETA 12m30s": throughput over the steps
// since the run (re)started, so the ETA is honest after a resume.
class Progress {
 public:
  Progress(std::string kind, std::string unit, int64_t first_step, int64_t total_steps,
           std::ostream* log);
  void step_done(int64_t step, double items);  // items processed by the step (tokens, images)
  void print(int64_t step, double loss, double lr, const std::string& extra = "");
  double items_per_second() const;
  double elapsed_seconds() const;
  std::ostream& log() { return *log_; }

 private:
  std::string kind_, unit_;
  int64_t first_, total_;
  std::ostream* log_;
  std::chrono::steady_clock::time_point start_;
  double items_ = 0;
  int64_t last_step_ = 0;
};

}  // namespace adtree::train
