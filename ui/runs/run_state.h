// RunState: what the window knows about the run on screen, accumulated from the bridge's signals on
// the GUI thread. Panels read it when they repaint (throttled), so a burst of steps costs only the
// bookkeeping here. Per-cell grids use NaN for cells not generated yet (QCPColorMap draws NaN
// transparent), per-step series are ready for QCustomPlot.
#pragma once
#include <QMap>
#include <QString>
#include <QVector>

#include <memory>
#include <vector>

#include "decode/settings/method_table.h"
#include "engine/events.h"

namespace adtree::ui {

// The value ranges of the maps, fixed per run from the settings (the method's row,
// decode::MethodRanges) so colours do not shift while the run fills the grid (grown if a value ever
// falls outside).
struct MapRanges : decode::MethodRanges {
  double top1_max = 0;  // largest top-1 probability seen (the map's scale is rounded up from it)
  // The drafted trees that ran (head levels and free chains together), from 0: grown as they come.
  double ran_d_max = 1, ran_k_max = 1;
};

class RunState {
 public:
  // TreeDepth and TreeWidth: the drafted tree that ran; PlanDepth and PlanWidth: the shape the
  // method planned (ADT-Tree's adjacency policy); Origin: decode::TokenOrigin of the cell's token.
  enum Map { Depth, Top1, AcceptLen, TreeDepth, TreeWidth, Origin, PlanDepth, PlanWidth, MapCount };

  void reset(const engine::JobStarted& started, const MapRanges& ranges);
  void clear();
  // No run, but the grid of the loaded model, all cells "not generated" (what an idle window
  // shows).
  void showEmpty(int gridH, int gridW, const MapRanges& ranges = {});
  void addSteps(const std::vector<engine::JobStep>& steps);
  void finish(const engine::JobFinished& finished);
  // A finished run read back (history, a saved run file): the same state addSteps would have built.
  // `vectors`: a continuous model's tokens, token_dim numbers each (empty for codes).
  void restore(const decode::RunStats& stats, const std::vector<int64_t>& tokens, double elapsedMs,
               const MapRanges& ranges, const std::vector<float>& vectors = {});

  // Replay: show the run as it was after `step` (-1 = everything). Maps, tokens and committed()
  // then describe that moment; the per-step series stay whole (the plots mark the step instead).
  void setViewStep(int step);
  int viewStep() const { return view_step_; }
  bool finished() const { return finished_; }
  // Step traces (empty pointers when the run was made without tracing).
  bool hasTraces() const;
  const decode::StepTrace* trace(int step) const;
  // The step that committed `cell` (-1 if none yet) and the cell's trace, if recorded.
  int stepOfCell(int cell) const;
  const decode::CellTrace* cellTrace(int cell) const;
  int stepFirstCell(int step) const { return step_first_.value(step, 0); }

  bool active() const { return job_ != 0; }
  engine::JobId job() const { return job_; }
  int gridH() const { return grid_h_; }
  int gridW() const { return grid_w_; }
  int cells() const { return grid_h_ * grid_w_; }
  int committed() const { return view_step_ < 0 ? committed_ : view_committed_; }
  decode::Method method() const { return method_; }
  const MapRanges& ranges() const { return ranges_; }
  // Bumped by every change; a panel repaints only when it differs from the one it last drew.
  quint64 version() const { return version_; }

  const QVector<double>& map(Map m) const { return view_step_ < 0 ? maps_[m] : view_maps_[m]; }
  // Whether `cell` is committed (at the replayed step): by its place in the commit order, so a run
  // that fills the grid in any order (MAR's random one, PJD's rows) reads the same as a raster one.
  bool filled(int cell) const {
    const int r = order_rank_.value(cell, -1);
    return r >= 0 && r < committed();
  }
  // The cells in the order they were committed; inOrder(): that order is the raster's.
  const QVector<int>& commitOrder() const { return order_; }
  bool inOrder() const { return in_order_; }
  qint64 token(int cell) const { return tokens().value(cell, -1); }
  // -1 for cells not generated (or not yet generated at the replayed step).
  const QVector<qint64>& tokens() const { return view_step_ < 0 ? tokens_ : view_tokens_; }
  int rank(int cell) const { return ranks_.value(cell, 0); }
  // A continuous model's tokens: tokenDim() numbers per cell (NaN where none yet); empty for codes.
  // Cells past committed() are not meant to be read (a replayed step shows fewer).
  const QVector<float>& vectors() const { return vectors_; }
  int tokenDim() const { return token_dim_; }
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
  double elapsedMs() const { return elapsed_ms_; }
  double tau() const { return forwards_ > 0 ? double(committed_) / double(forwards_) : 0; }
  double tokensPerSecond() const;
  // Seconds left at the current speed; negative when unknown.
  double etaSeconds() const;
  // One multi-line description of a cell for tooltips and the hover box (empty if out of range).
  QString describeCell(int cell) const;

 private:
  void addVector(int cell, const engine::JobStep& s, size_t i);
  QString describeVector(int cell) const;

  engine::JobId job_ = 0;
  decode::Method method_ = decode::Method::Ar;
  int grid_h_ = 0, grid_w_ = 0;
  int committed_ = 0;
  MapRanges ranges_;
  quint64 version_ = 0;
  QVector<double> maps_[MapCount];
  QVector<qint64> tokens_;
  QVector<float> vectors_;
  int token_dim_ = 0;
  QVector<int> ranks_;
  QVector<double> step_index_, step_committed_, step_d_, step_k_, step_seconds_, step_rate_;
  QMap<int, int> accept_hist_;
  QVector<std::shared_ptr<const decode::StepTrace>> traces_;
  QVector<int> step_first_, step_cum_;
  QVector<int> order_, order_rank_;  // cells in commit order; each cell's place in it (-1: none)
  bool in_order_ = true;
  int view_step_ = -1, view_committed_ = 0;
  QVector<double> view_maps_[MapCount];
  QVector<qint64> view_tokens_;
  qint64 forwards_ = 0;
  double elapsed_ms_ = 0;
  bool finished_ = false;
  double final_tokens_per_s_ = 0;
};

}  // namespace adtree::ui
