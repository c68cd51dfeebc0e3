// StallMeter: how long the GUI thread can go without serving its event loop. A 5 ms timer records
// the gap between its ticks; a gap longer than the interval is time the loop was busy elsewhere
// (painting, handling events). Used by the GUI tests and `adtree-studio --benchmark` (docs/GUI.md).
#pragma once
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

}  // namespace adtree::ui
