#include "ui/panels/histogram_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>
#include <algorithm>
#include "decode/stats/position_acceptance.h"
#include "ui/runs/run_record.h"
#include "ui/views/plot_style.h"
#include "ui/views/qcp.h"

namespace adtree::ui {

HistogramRun histogramOf(const RunRecord& r) {
  HistogramRun h;
  h.label = QStringLiteral("#%1 %2 · %3").arg(r.id).arg(r.label, r.prompt.left(24));
  for (const auto& st : r.stats->steps) h.acceptLengths.push_back(int(st.committed));
  const auto positions = decode::position_acceptance(*r.stats);
  for (size_t i = 0; i < positions.reached.size(); ++i) {
    h.reached.push_back(int(positions.reached[i]));
    h.stood.push_back(int(positions.stood[i]));
  }
  if (!h.reached.isEmpty()) return h;  // CSpD's drafts have no rank
  for (size_t c = 0; c < r.tokens.size(); ++c) {
    const auto& cs = r.stats->grids.at(int64_t(c));
    if (cs.depth > 0) h.acceptedRanks.push_back(cs.rank);
  }
  return h;
}

namespace {
const QColor kBlue(0x3b, 0x82, 0xf6), kGreen(0x10, 0xb9, 0x81);

// Share of each value (plus `offset`, to show 0-based ranks as 1-based) among the non-negative
// values: negative ones are not counted at all, so the shares always sum to 1.
QMap<int, double> sharesOf(const QVector<int>& values, int offset) {
  QMap<int, double> shares;
  int total = 0;
  for (int v : values) {
    if (v < 0) continue;
    shares[v + offset] += 1;
    ++total;
  }
  for (auto& s : shares) s /= total;
  return shares;
}

void setBars(QCPBars* bars, const QMap<int, double>& shares) {
  QVector<double> keys, values;
  for (auto it = shares.cbegin(); it != shares.cend(); ++it) {
    keys << it.key();
    values << it.value();
  }
  bars->setData(keys, values, true);
  QCustomPlot* plot = bars->parentPlot();
  const double top = values.isEmpty() ? 1.0 : *std::max_element(values.begin(), values.end());
  plot->xAxis->setRange(0.4, (keys.isEmpty() ? 1.0 : std::max(2.0, keys.back())) + 0.6);
  plot->yAxis->setRange(0, std::min(1.0, top * 1.15) + 0.02);
  plot->replot(QCustomPlot::rpQueuedReplot);
}

// CSpD: the share of reached rounds in which each position's draft stood (1-based positions).
QMap<int, double> positionShares(const HistogramRun& r) {
  QMap<int, double> out;
  for (int i = 0; i < r.reached.size(); ++i)
    if (r.reached[i] > 0) out[i + 1] = double(r.stood[i]) / double(r.reached[i]);
  return out;
}

QMap<int, double> sharesDrawn(const QCPBars* bars) {
  QMap<int, double> out;
  for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it) {
    out[int(std::lround(it->key))] = it->value;
  }
  return out;
}
}  // namespace

HistogramPanel::HistogramPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("histogramPanel");  // one per window: scripts and tests find it by name
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(0, 0, 0, 0);
  col->setSpacing(4);
  auto* top = new QHBoxLayout;
  auto* runLabel = new QLabel(tr("Run:"), this);
  box_ = new QComboBox(this);
  box_->setObjectName("histogramRun");
  box_->setToolTip(tr("The run (method) whose histograms are shown."));
  box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  runLabel->setBuddy(box_);
  top->addWidget(runLabel);
  top->addWidget(box_);
  top->addStretch(1);
  col->addLayout(top);

  auto* row = new QHBoxLayout;
  row->setSpacing(4);
  lengths_plot_ = makePlot(
      tr("(a) Acceptance length"), tr("tokens committed per step"), tr("share of steps"),
      tr("Share of decoding steps that committed 1, 2, 3, ... tokens (accepted drafts + 1).\n"
         "Plain AR is always 1; the further right the mass, the fewer target passes per image."));
  ranks_plot_ = makePlot(
      tr("(b) Top-k location of accepted tokens"), tr("draft rank (1 = top-1 candidate)"),
      tr("share of accepted tokens"),
      tr("Where the accepted draft tokens sat in the draft's own ranking at their level.\n"
         "Mass beyond rank 1 is what a wider tree buys: a chain (k = 1) would have missed it."));
  ranks_title_ = qobject_cast<QCPTextElement*>(ranks_plot_->plotLayout()->element(0, 0));
  row->addWidget(lengths_plot_, 1);
  row->addWidget(ranks_plot_, 1);
  col->addLayout(row, 1);

  lengths_ = new QCPBars(lengths_plot_->xAxis, lengths_plot_->yAxis);
  lengths_->setWidth(0.8);
  lengths_->setPen(QPen(kBlue.darker(130)));
  lengths_->setBrush(kBlue);
  ranks_ = new QCPBars(ranks_plot_->xAxis, ranks_plot_->yAxis);
  ranks_->setWidth(0.8);
  ranks_->setPen(QPen(kGreen.darker(140)));
  ranks_->setBrush(kGreen);

  summary_ = new QLabel(this);
  summary_->setObjectName("histogramSummary");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  col->addWidget(summary_);

  connect(box_, &QComboBox::currentIndexChanged, this, [this] { showCurrent(); });
  showCurrent();
}

QCustomPlot* HistogramPanel::makePlot(const QString& title, const QString& xLabel,
                                      const QString& yLabel, const QString& help) {
  auto* p = makeStyledPlot(this, title, help);
  p->setMinimumSize(180, 140);
  p->xAxis->setLabel(xLabel);
  p->yAxis->setLabel(yLabel);
  // Lengths and ranks are whole numbers: a tick per bar, thinned to multiples when there are many.
  QSharedPointer<QCPAxisTickerFixed> whole(new QCPAxisTickerFixed);
  whole->setTickStep(1);
  whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  whole->setTickCount(8);
  p->xAxis->setTicker(whole);
  p->xAxis->grid()->setVisible(false);
  p->xAxis->setRange(0, 1);
  p->yAxis->setRange(0, 1);
  return p;
}

void HistogramPanel::setRun(int id, const HistogramRun& r) {
  runs_[id] = r;
  const QString label = r.label.isEmpty() ? tr("run %1").arg(id) : r.label;
  int i = box_->findData(id);
  if (i < 0) {
    // Silently: the first item would otherwise be shown before it is selected below.
    const QSignalBlocker quiet(box_);
    box_->addItem(label, id);
    i = box_->count() - 1;
  } else {
    box_->setItemText(i, label);
  }
  if (box_->currentIndex() != i) {
    box_->setCurrentIndex(i);  // shows it through currentIndexChanged
  } else {
    showCurrent();  // same entry, new data
  }
}

void HistogramPanel::removeRun(int id) {
  runs_.remove(id);
  const int i = box_->findData(id);
  if (i >= 0) box_->removeItem(i);
  showCurrent();
}

void HistogramPanel::clearRuns() {
  runs_.clear();
  box_->clear();
  showCurrent();
}

int HistogramPanel::runCount() const {
  return int(runs_.size());
}

int HistogramPanel::currentRun() const {
  const QVariant id = box_->currentData();
  return id.isValid() ? id.toInt() : -1;
}

void HistogramPanel::showCurrent() {
  const int id = currentRun();
  const auto it = runs_.constFind(id);
  if (it == runs_.cend()) {
    setRanksMode(false);
    setBars(lengths_, {});
    setBars(ranks_, {});
    summary_->setText(tr("No run to show."));
  } else {
    const HistogramRun& r = *it;
    setRanksMode(!r.reached.isEmpty());
    setBars(lengths_, sharesOf(r.acceptLengths, 0));
    const QMap<int, double> bars =
        r.reached.isEmpty() ? sharesOf(r.acceptedRanks, 1) : positionShares(r);
    setBars(ranks_, bars);
    summary_->setText(summaryOf(r, bars));
  }
  if (id != shown_id_) {
    shown_id_ = id;
    Q_EMIT currentRunChanged(id);
  }
}

void HistogramPanel::setRanksMode(bool positions) {
  if (positions) {
    ranks_title_->setText(tr("(b) Acceptance by draft position"));
    ranks_plot_->xAxis->setLabel(tr("draft position in the round"));
    ranks_plot_->yAxis->setLabel(tr("share of drafts that stood"));
    ranks_plot_->setToolTip(
        tr("CSpD: of the rounds whose acceptance test reached a draft position, the share in "
           "which\nthat position's draft stood. The test stops at the first refusal, so later "
           "positions are reached less often."));
  } else {
    ranks_title_->setText(tr("(b) Top-k location of accepted tokens"));
    ranks_plot_->xAxis->setLabel(tr("draft rank (1 = top-1 candidate)"));
    ranks_plot_->yAxis->setLabel(tr("share of accepted tokens"));
    ranks_plot_->setToolTip(
        tr("Where the accepted draft tokens sat in the draft's own ranking at their level.\n"
           "Mass beyond rank 1 is what a wider tree buys: a chain (k = 1) would have missed it."));
  }
}

QString HistogramPanel::summaryOf(const HistogramRun& r, const QMap<int, double>& bars) const {
  const QString name = box_->currentText();
  long long steps = 0, tokens = 0;
  for (int v : r.acceptLengths) {
    if (v < 0) continue;
    ++steps;
    tokens += v;
  }
  QString text = steps == 0 ? tr("%1: no steps.").arg(name)
                            : tr("%1: %2 steps, mean acceptance length %3 tokens/step")
                                  .arg(name)
                                  .arg(steps)
                                  .arg(double(tokens) / double(steps), 0, 'f', 2);
  if (!r.reached.isEmpty()) {
    long long judged = 0, stood = 0;
    for (int i = 0; i < r.reached.size(); ++i) judged += r.reached[i], stood += r.stood[i];
    return text + tr("; %1 of %2 judged drafts stood (%3%), %4% at the first position.")
                      .arg(stood)
                      .arg(judged)
                      .arg(100.0 * double(stood) / double(std::max(1LL, judged)), 0, 'f', 1)
                      .arg(100.0 * bars.value(1, 0.0), 0, 'f', 1);
  }
  long long accepted = 0;
  for (int v : r.acceptedRanks) accepted += v >= 0 ? 1 : 0;
  if (accepted == 0) return text + tr("; no draft token accepted.");
  return text + tr("; %1 accepted draft tokens, %2% of them the draft's top-1 candidate.")
                    .arg(accepted)
                    .arg(100.0 * bars.value(1, 0.0), 0, 'f', 1);
}

int HistogramPanel::lengthBars() const {
  return lengths_->dataCount();
}
int HistogramPanel::rankBars() const {
  return ranks_->dataCount();
}
QMap<int, double> HistogramPanel::lengthShares() const {
  return sharesDrawn(lengths_);
}
QMap<int, double> HistogramPanel::rankShares() const {
  return sharesDrawn(ranks_);
}
QString HistogramPanel::rankTitle() const {
  return ranks_title_->text();
}
QString HistogramPanel::summary() const {
  return summary_->text();
}

}  // namespace adtree::ui
