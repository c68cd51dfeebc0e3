// RunState: what the window knows about the run on screen, accumulated from the bridge's signals on
// the GUI thread. Panels read it when they repaint (throttled), so a burst of steps costs only the
// bookkeeping here. Per-cell grids use NaN for cells not generated yet (QCPColorMap draws NaN
// transparent), per-step series are ready for QCustomPlot.
#pragma once
#include <QMap>
#include <QString>
#include <QVector>

#include <vector>

#include "engine/events.h"

namespace adtree::ui {

// The value ranges of the maps, fixed per run from the settings so colours do not shift while the
// run fills the grid (grown if a value ever falls outside).
struct MapRanges {
  double depth_max = 1;    // draft levels a tree may have (0 = sampled by the target)
  double accept_max = 1;   // tokens one step may commit
  double tree_d_min = 0, tree_d_max = 1;
  double tree_k_min = 0, tree_k_max = 1;
  double top1_max = 0;     // largest top-1 probability seen (the map's scale is rounded up from it)
};

class RunState {
 public:
  enum Map { Depth, Top1, AcceptLen, TreeDepth, TreeWidth, MapCount };

  void reset(const engine::JobStarted& started, const MapRanges& ranges);
  void clear();
  // No run, but the grid of the loaded model, all cells "not generated" (what an idle window shows).
  void showEmpty(int gridH, int gridW, const MapRanges& ranges = {});
  void addSteps(const std::vector<engine::JobStep>& steps);
  void finish(const engine::JobFinished& finished);

  bool active() const { return job_ != 0; }
  engine::JobId job() const { return job_; }
  int gridH() const { return grid_h_; }
  int gridW() const { return grid_w_; }
  int cells() const { return grid_h_ * grid_w_; }
  int committed() const { return committed_; }
  const QString& method() const { return method_; }
  const MapRanges& ranges() const { return ranges_; }
  // Bumped by every change; a panel repaints only when it differs from the one it last drew.
  quint64 version() const { return version_; }

  const QVector<double>& map(Map m) const { return maps_[m]; }
  bool filled(int cell) const { return cell >= 0 && cell < committed_; }
  qint64 token(int cell) const { return tokens_.value(cell, -1); }
  const QVector<qint64>& tokens() const { return tokens_; }  // -1 for cells not generated
  int rank(int cell) const { return ranks_.value(cell, 0); }
  // Steps, one entry each.
  const QVector<double>& stepIndex() const { return step_index_; }
  const QVector<double>& stepCommitted() const { return step_committed_; }
  const QVector<double>& stepDepth() const { return step_d_; }
  const QVector<double>& stepWidth() const { return step_k_; }
  const QVector<double>& stepSeconds() const { return step_seconds_; }  // elapsed at the step's end
  const QVector<double>& stepRate() const { return step_rate_; }        // tokens/s, sliding window
  // Accept length -> number of steps.
  const QMap<int, int>& acceptHistogram() const { return accept_hist_; }

  int steps() const { return int(step_index_.size()); }
  qint64 targetForwards() const { return forwards_; }
  double elapsedMs() const { return elapsed_ms_; }
  double tau() const { return forwards_ > 0 ? double(committed_) / double(forwards_) : 0; }
  double tokensPerSecond() const;
  // Seconds left at the current speed; negative when unknown.
  double etaSeconds() const;
  // One multi-line description of a cell for tooltips and the hover box (empty if out of range).
  QString describeCell(int cell) const;

 private:
  engine::JobId job_ = 0;
  QString method_;
  int grid_h_ = 0, grid_w_ = 0;
  int committed_ = 0;
  MapRanges ranges_;
  quint64 version_ = 0;
  QVector<double> maps_[MapCount];
  QVector<qint64> tokens_;
  QVector<int> ranks_;
  QVector<double> step_index_, step_committed_, step_d_, step_k_, step_seconds_, step_rate_;
  QMap<int, int> accept_hist_;
  qint64 forwards_ = 0;
  double elapsed_ms_ = 0;
  bool finished_ = false;
  double final_tokens_per_s_ = 0;
};

}  // namespace adtree::ui
