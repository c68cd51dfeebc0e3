// Measuring the GUI thread (docs/GUI.md, "Measurements").
//  - StallMeter: a 5 ms timer records the gap between its ticks; a gap longer than the interval is
//    time the event loop could not run (busy in a handler, or not scheduled on a CPU at all).
//  - TimedApplication: times every top-level event delivery on the GUI thread in wall and
//  thread-CPU
//    time, which tells the two causes apart: CPU time is our code, wall minus CPU is the scheduler.
// Used by the GUI tests and by `adtree-studio --benchmark`.
#pragma once
#include <QApplication>
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <QVector>

namespace adtree::ui {

class StallMeter : public QObject {
  Q_OBJECT

 public:
  explicit StallMeter(QObject* parent = nullptr, int intervalMs = 5);
  void start();
  void stop();
  double maxGapMs() const { return max_gap_ms_; }
  // The q-quantile (0..1) of the tick gaps.
  double quantileMs(double q) const;
  int ticks() const { return int(gaps_.size()); }

 private:
  void tick();
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ns_ = 0;
  double max_gap_ms_ = 0;
  QVector<double> gaps_;
};

class TimedApplication : public QApplication {
 public:
  TimedApplication(int& argc, char** argv) : QApplication(argc, argv) {}
  bool notify(QObject* receiver, QEvent* event) override;

  void startTiming();
  void stopTiming() { timing_ = false; }
  double maxEventWallMs() const { return max_wall_ms_; }
  double maxEventCpuMs() const { return max_cpu_ms_; }
  double totalCpuMs() const { return total_cpu_ms_; }
  int slowestEventType() const { return slowest_type_; }
  QString slowestReceiver() const { return slowest_receiver_; }

 private:
  bool timing_ = false;
  int depth_ = 0;
  double max_wall_ms_ = 0, max_cpu_ms_ = 0, total_cpu_ms_ = 0;
  int slowest_type_ = 0;
  QString slowest_receiver_;
};

}  // namespace adtree::ui
