#include "ui/panels/stall_meter.h"

#include <QThread>

#include <algorithm>
#include <ctime>

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

namespace {
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}
double wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}
}  // namespace

void TimedApplication::startTiming() {
  max_wall_ms_ = max_cpu_ms_ = total_cpu_ms_ = 0;
  slowest_type_ = 0;
  slowest_receiver_.clear();
  timing_ = true;
}

bool TimedApplication::notify(QObject* receiver, QEvent* event) {
  // Only top-level deliveries on the GUI thread: nested sends are part of their parent's time, and
  // other threads' events are not the GUI's (nor may they touch depth_).
  if (QThread::currentThread() != thread()) return QApplication::notify(receiver, event);
  if (!timing_ || depth_ > 0) {
    ++depth_;
    const bool r = QApplication::notify(receiver, event);
    --depth_;
    return r;
  }
  // Read before delivery: the receiver may delete itself while handling the event (single-shot
  // timers do). The class name is static data and outlives it.
  const char* cls = receiver->metaObject()->className();
  const int type = int(event->type());
  const double w0 = wall_ms(), c0 = thread_cpu_ms();
  ++depth_;
  const bool r = QApplication::notify(receiver, event);
  --depth_;
  const double cpu = thread_cpu_ms() - c0, wall = wall_ms() - w0;
  total_cpu_ms_ += cpu;
  if (cpu > max_cpu_ms_) {
    max_cpu_ms_ = cpu;
    slowest_type_ = type;
    slowest_receiver_ = QString::fromLatin1(cls);
  }
  max_wall_ms_ = std::max(max_wall_ms_, wall);
  return r;
}

}  // namespace adtree::ui
