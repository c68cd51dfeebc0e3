// HistogramPanel: the paper's Figure 3 for one run at a time: (a) how many tokens each step
// committed, as a share of steps, and (b) where in the draft's ranking the accepted draft tokens
// sat (1 = the draft's top-1 candidate), as a share of accepted tokens. A CSpD run (vector tokens:
// a chain of drafts with no ranking) shows instead (b) the acceptance at each draft position: of
// the rounds whose test reached the position, the share in which its draft stood (the per-position
// acceptance of the CSpD paper). Runs (one per method, say) are kept side by side and picked in a
// combo box, so methods can be compared on one screen.
#pragma once
#include <QMap>
#include <QString>
#include <QVector>
#include <QWidget>

class QComboBox;
class QCustomPlot;
class QCPBars;
class QCPTextElement;
class QLabel;

namespace adtree::ui {

struct HistogramRun {
  QString label;               // shown in the combo box and the summary
  QVector<int> acceptLengths;  // tokens committed per step (accepted drafts + 1)
  QVector<int> acceptedRanks;  // 0-based draft rank of each accepted draft token
  // CSpD: per draft position (index 0 = the round's first draft), the rounds whose test reached
  // it and those in which its draft stood. Empty for the tree and Jacobi methods.
  QVector<int> reached{}, stood{};
};

struct RunRecord;
// A run's histogram data: its label, the tokens committed per step and the ranks accepted.
HistogramRun histogramOf(const RunRecord& r);

class HistogramPanel : public QWidget {
  Q_OBJECT

 public:
  explicit HistogramPanel(QWidget* parent = nullptr);

  // Adds the run, or replaces the one with that id, and shows it.
  void setRun(int id, const HistogramRun& r);
  void removeRun(int id);
  void clearRuns();
  int runCount() const;
  // The id of the run shown; -1 when there is none.
  int currentRun() const;

  // For tests: the combo box, bars in each chart, the shares drawn (1-based key -> share) and the
  // summary line.
  QComboBox* runBox() const { return box_; }
  int lengthBars() const;
  int rankBars() const;
  QMap<int, double> lengthShares() const;
  QMap<int, double> rankShares() const;  // (b)'s bars: ranks' shares, or CSpD's per position
  QString rankTitle() const;             // (b)'s title
  QString summary() const;

 Q_SIGNALS:
  void currentRunChanged(int id);

 private:
  QCustomPlot* makePlot(const QString& title, const QString& xLabel, const QString& yLabel,
                        const QString& help);
  void showCurrent();
  // (b) as the ranks of a tree's accepted drafts, or as CSpD's acceptance per draft position.
  void setRanksMode(bool positions);
  QString summaryOf(const HistogramRun& r, const QMap<int, double>& bars) const;

  QComboBox* box_ = nullptr;
  QLabel* summary_ = nullptr;
  QCustomPlot* lengths_plot_ = nullptr;
  QCustomPlot* ranks_plot_ = nullptr;
  QCPBars* lengths_ = nullptr;
  QCPBars* ranks_ = nullptr;
  QCPTextElement* ranks_title_ = nullptr;
  QMap<int, HistogramRun> runs_;
  int shown_id_ = -1;  // what the charts show: currentRunChanged fires when it changes
};

}  // namespace adtree::ui
