#include "train/reporting.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

using json = nlohmann::json;

MetricsLog::MetricsLog(const std::string& out_dir, bool append)
    : out_(run_file(out_dir, "metrics.jsonl"), append ? std::ios::app : std::ios::trunc) {
  if (!out_) throw Error(run_file(out_dir, "metrics.jsonl") + ": cannot write the metrics log");
}

void MetricsLog::write(const json& record) {
  out_ << record.dump() << "\n";
  out_.flush();
}

Progress::Progress(std::string kind, std::string unit, int64_t first_step, int64_t total_steps,
                   std::ostream* log)
    : kind_(std::move(kind)),
      unit_(std::move(unit)),
      first_(first_step),
      total_(total_steps),
      log_(log ? log : &std::cout),
      start_(std::chrono::steady_clock::now()),
      last_step_(first_step) {}

void Progress::step_done(int64_t step, double items) {
  items_ += items;
  last_step_ = step;
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::items_per_second() const {
  const double s = elapsed_seconds();
  return s > 0 ? items_ / s : 0.0;
}

namespace {
std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  std::ostringstream os;
  if (t >= 3600)
    os << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else
    os << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  return os.str();
}
}  // namespace

void Progress::print(int64_t step, double loss, double lr, const std::string& extra) {
  const double done = double(last_step_ - first_);
  const double per_step = done > 0 ? elapsed_seconds() / done : 0.0;
  std::ostringstream os;
  os << kind_ << " step " << step << "/" << total_ << " loss " << std::fixed << std::setprecision(4)
     << loss << " lr " << std::scientific << std::setprecision(2) << lr << std::fixed
     << std::setprecision(0) << " " << items_per_second() << " " << unit_ << "/s ETA "
     << duration_text(per_step * double(total_ - step));
  if (!extra.empty()) os << " " << extra;
  *log_ << os.str() << std::endl;
}

}  // namespace adtree::train
