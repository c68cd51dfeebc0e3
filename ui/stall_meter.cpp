#include "ui/stall_meter.h"

#include <algorithm>

namespace adtree::ui {

StallMeter::StallMeter(QObject* parent, int intervalMs) : QObject(parent) {
  timer_.setInterval(intervalMs);
  timer_.setTimerType(Qt::PreciseTimer);
  connect(&timer_, &QTimer::timeout, this, &StallMeter::tick);
}

void StallMeter::start() {
  gaps_.clear();
  max_gap_ms_ = 0;
  clock_.start();
  last_ns_ = clock_.nsecsElapsed();
  timer_.start();
}

void StallMeter::stop() {
  timer_.stop();
  tick();  // the gap up to now counts too
}

void StallMeter::tick() {
  const qint64 now = clock_.nsecsElapsed();
  const double gap = double(now - last_ns_) / 1e6;
  last_ns_ = now;
  gaps_.push_back(gap);
  max_gap_ms_ = std::max(max_gap_ms_, gap);
}

double StallMeter::quantileMs(double q) const {
  if (gaps_.isEmpty()) return 0;
  QVector<double> s = gaps_;
  std::sort(s.begin(), s.end());
  return s[std::min(int(s.size()) - 1, int(q * (s.size() - 1) + 0.5))];
}

}  // namespace adtree::ui
