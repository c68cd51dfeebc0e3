// DistributionView: the token distribution at one committed cell (the paper's Figures 4 and 5): the
// target's top-N probabilities as bars, the committed token and the draft's candidates marked, and
// a table of the candidates with their draft q and target p. A confident (simple) region shows one
// tall bar the draft usually hits; a complex one spreads its mass, which is where drafts fail and
// ADT-Tree widens the tree instead of deepening it.
#pragma once
#include <QString>
#include <QWidget>

#include "decode/stats/trace.h"
#include "ui/runs/run_state.h"

class QCheckBox;
class QCustomPlot;
class QCPBars;
class QCPGraph;
class QLabel;
class QSplitter;
class QTableWidget;

namespace adtree::ui {

class DistributionView : public QWidget {
  Q_OBJECT

 public:
  explicit DistributionView(QWidget* parent = nullptr);

  // Shows cell `c`; gridW (tokens per row) names it as (row, col); `method` is the run's method in
  // words, for the headline.
  void setCell(const decode::CellTrace& c, int gridW, const QString& method);
  void clear();
  // Cell `cell` of a run: its distribution, or (cleared) the reason there is none to show, which
  // the caller says in the status line; an empty string when it is shown.
  QString showCell(const RunState& run, int cell);
  // A continuous model's token is a vector: no codebook distribution exists to show, and the
  // headline and showCell say so instead.
  void setVectorTokens(bool vectors);

  // For tests: bars drawn (the top-N), candidate table rows, the y axis mode and the headline.
  int barCount() const;
  int candidateRows() const;
  bool logScale() const;
  QCheckBox* logScaleBox() const { return log_box_; }
  QString headline() const;
  QCustomPlot* plot() const { return plot_; }

 private:
  // The constructor's steps, in creation order (the focus chain follows it).
  bool vectors_ = false;
  QLabel* buildHeadline();
  QCustomPlot* buildPlot(QWidget* parent);
  void addSeries();
  void placeLegend();
  QCheckBox* buildLogBox(QWidget* parent);
  void buildTable(QWidget* parent);
  void applyScale();

  QLabel* headline_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPBars* others_ = nullptr;     // top-N tokens other than the committed one
  QCPBars* committed_ = nullptr;  // the committed token's bar, when it is in the top-N
  QCPGraph* cands_ = nullptr;     // markers on the bars of draft candidates
  QCheckBox* log_box_ = nullptr;
  QTableWidget* table_ = nullptr;
  QSplitter* split_ = nullptr;    // the chart beside the table
  double max_p_ = 0, min_p_ = 0;  // over the bars: the axis ranges
};

}  // namespace adtree::ui
