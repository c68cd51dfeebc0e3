// PlotPanel: the run over time (SPEC_DECODING.md 7): tokens committed per step, the tree shape (d,
// k) chosen per step, decoding speed, and the histogram of acceptance lengths.
#pragma once
#include <QWidget>

#include "ui/runs/run_state.h"

class QCustomPlot;
class QCPGraph;
class QCPBars;

namespace adtree::ui {

class PlotPanel : public QWidget {
  Q_OBJECT

 public:
  explicit PlotPanel(QWidget* parent = nullptr);
  void refresh(const RunState& run);

  // For tests: points in each series.
  int tokensPerStepPoints() const;
  int treeShapePoints() const;
  int speedPoints() const;
  int histogramBars() const;
  // Sum over the plots of QCustomPlot's average replot time (ms): the cost of one refresh.
  double replotCostMs() const;

 private:
  QCustomPlot* makePlot(const QString& title, const QString& xLabel, const QString& yLabel,
                        const QString& help);

  QCustomPlot* per_step_ = nullptr;
  QCustomPlot* shape_ = nullptr;
  QCustomPlot* speed_ = nullptr;
  QCustomPlot* hist_ = nullptr;
  QCPGraph* committed_ = nullptr;
  QCPGraph* depth_ = nullptr;
  QCPGraph* width_ = nullptr;
  QCPGraph* rate_ = nullptr;
  QCPBars* bars_ = nullptr;
  quint64 drawn_version_ = ~quint64(0);
};

}  // namespace adtree::ui
