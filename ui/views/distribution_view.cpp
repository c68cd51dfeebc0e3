#include "ui/views/distribution_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <vector>
#include "ui/panels/method_names.h"
#include "ui/views/plot_style.h"
#include "ui/views/qcp.h"

namespace adtree::ui {

namespace {
const QColor kBlue(0x3b, 0x82, 0xf6), kOrange(0xf5, 0x9e, 0x0b), kGreen(0x10, 0xb9, 0x81);
// The log axis starts here unless a bar is smaller: a random model's top-N sit near 1/V (~6e-5 for
// 16384 codes), which must stay visible.
constexpr double kLogFloor = 1e-4, kLogMin = 1e-9, kLogTop = 1.5;
enum Column { kToken, kDraftQ, kTargetP, kTargetRank, kMark, kColumns };

QString cellName(int64_t cell, int gridW) {
  if (gridW <= 0) return QString::number(cell);
  return QStringLiteral("(%1, %2)").arg(cell / gridW).arg(cell % gridW);
}

QString prob(double p) {
  return QString::number(p, 'g', 4);
}

QVector<double> qvec(const std::vector<double>& v) {
  return QVector<double>(v.begin(), v.end());
}

QTableWidgetItem* cellItem(const QString& text) {
  auto* it = new QTableWidgetItem(text);
  it->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return it;
}
}  // namespace

DistributionView::DistributionView(QWidget* parent) : QWidget(parent) {
  setObjectName("distributionView");  // one per window: scripts and tests find it by name
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(0, 0, 0, 0);
  col->setSpacing(4);
  col->addWidget(buildHeadline());

  // Chart beside table: the view lives in a wide, short dock under the maps.
  auto* split = split_ = new QSplitter(Qt::Horizontal, this);
  col->addWidget(split, 1);
  auto* top = new QWidget(split);
  auto* topCol = new QVBoxLayout(top);
  topCol->setContentsMargins(0, 0, 0, 0);
  topCol->setSpacing(2);
  topCol->addWidget(buildPlot(top), 1);
  topCol->addWidget(buildLogBox(top));

  buildTable(split);
  split->addWidget(top);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setChildrenCollapsible(false);
  clear();
}

QLabel* DistributionView::buildHeadline() {
  headline_ = new QLabel(this);
  headline_->setObjectName("distributionHeadline");
  headline_->setWordWrap(true);
  headline_->setTextFormat(Qt::PlainText);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  headline_->setAlignment(Qt::AlignLeft | Qt::AlignTop);  // alone in the dock for a vector model
  return headline_;
}

QCustomPlot* DistributionView::buildPlot(QWidget* parent) {
  plot_ =
      makeStyledPlot(parent, tr("Target distribution"),
                     tr("The target model's most likely tokens at this cell, most likely first "
                        "(tick labels: token ids).\nGreen: the committed token. Orange markers: "
                        "tokens the draft proposed here.\nOne tall bar = a simple region the draft "
                        "tends to hit; a flat spread = a complex region."));
  plot_->setMinimumSize(200, 150);
  plot_->xAxis->setLabel(tr("target rank (tick: token id)"));
  plot_->yAxis->setLabel(tr("target p"));
  plot_->xAxis->grid()->setVisible(false);
  addSeries();
  placeLegend();
  return plot_;
}

// The bars (other tokens, the committed one) and the draft-candidate markers.
void DistributionView::addSeries() {
  others_ = new QCPBars(plot_->xAxis, plot_->yAxis);
  others_->setName(tr("target p"));
  others_->setWidth(0.75);
  others_->setPen(QPen(kBlue.darker(130)));
  others_->setBrush(kBlue);
  committed_ = new QCPBars(plot_->xAxis, plot_->yAxis);
  committed_->setName(tr("committed"));
  committed_->setWidth(0.75);
  committed_->setPen(QPen(kGreen.darker(140)));
  committed_->setBrush(kGreen);
  cands_ = plot_->addGraph();
  cands_->setName(tr("draft candidate"));
  cands_->setLineStyle(QCPGraph::lsNone);
  cands_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted,
                                          QPen(kOrange.darker(150), 1.2), QBrush(kOrange), 10));
}

// One row under the title, not inside the axes: in a short dock an inset legend hides bars.
void DistributionView::placeLegend() {
  auto* legend = plot_->legend;
  legend->setVisible(true);
  legend->setFont(QFont(font().family(), std::max(6, font().pointSize() - 2)));
  legend->setBrush(QColor(255, 255, 255, 200));
  legend->setBorderPen(Qt::NoPen);
  plot_->axisRect()->insetLayout()->take(legend);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->plotLayout()->insertRow(1);
  plot_->plotLayout()->addElement(1, 0, legend);
  plot_->plotLayout()->setRowStretchFactor(1, 0.001);
  plot_->plotLayout()->setRowSpacing(0);
}

QCheckBox* DistributionView::buildLogBox(QWidget* parent) {
  log_box_ = new QCheckBox(tr("Log scale"), parent);
  log_box_->setObjectName("distributionLogScale");
  log_box_->setToolTip(tr("Logarithmic probability axis: shows the tail of the distribution."));
  connect(log_box_, &QCheckBox::toggled, this, [this] { applyScale(); });
  return log_box_;
}

void DistributionView::buildTable(QWidget* parent) {
  table_ = new QTableWidget(0, kColumns, parent);
  table_->setObjectName("candidateTable");
  table_->setHorizontalHeaderLabels(
      {tr("token"), tr("draft q"), tr("target p"), tr("target rank"), QString()});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setToolTip(tr("Draft rank (1 = the draft's best)"));
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setToolTip(
      tr("The draft's candidates at this cell (the children of the accepted parent "
         "node), with their draft and target probabilities."));
}

void DistributionView::setVectorTokens(bool vectors) {
  vectors_ = vectors;
  split_->setVisible(!vectors);  // an empty chart and table would only suggest missing data
  clear();
}

void DistributionView::clear() {
  headline_->setText(
      vectors_ ? tr("This model's tokens are vectors drawn by a diffusion head: there is no "
                    "distribution over a codebook to show. The maps hold each drafted token's "
                    "acceptance probability, depth and round.")
               : tr("Click a cell of the image or of a map: the target's distribution there, "
                    "and what the draft offered, appear here."));
  others_->data()->clear();
  committed_->data()->clear();
  cands_->data()->clear();
  plot_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  plot_->xAxis->setRange(0, 1);
  table_->setRowCount(0);
  max_p_ = min_p_ = 0;
  applyScale();
}

void DistributionView::setCell(const decode::CellTrace& c, int gridW, const QString& method) {
  const decode::TopBars bars = decode::top_bars(c);
  const int n = bars.n;
  max_p_ = bars.max_p;
  min_p_ = bars.min_p;
  others_->setData(qvec(bars.other_x), qvec(bars.other_p), true);
  committed_->setData(qvec(bars.committed_x), qvec(bars.committed_p), true);
  QVector<double> ticks;
  QVector<QString> labels;
  for (int i = 0; i < n; ++i) {
    ticks << i + 1;
    labels << QString::number(c.top_tokens[size_t(i)]);
  }
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  ticker->setTicks(ticks, labels);
  plot_->xAxis->setTicker(ticker);
  // Token ids are up to five digits: upright labels would overlap past a handful of bars.
  plot_->xAxis->setTickLabelRotation(n > 6 ? -90 : 0);
  plot_->xAxis->setRange(0.4, std::max(1, n) + 0.6);

  const int rows = int(c.cand_tokens.size());
  table_->setRowCount(rows);
  for (int r = 0; r < rows; ++r) {
    const int64_t token = c.cand_tokens[size_t(r)];
    const int at = bars.cand_bar[size_t(r)];
    const bool committed = token == c.token;
    table_->setItem(r, kToken, cellItem(QString::number(token)));
    table_->setItem(
        r, kDraftQ,
        cellItem(size_t(r) < c.cand_q.size() ? prob(c.cand_q[size_t(r)]) : QStringLiteral("-")));
    table_->setItem(
        r, kTargetP,
        cellItem(size_t(r) < c.cand_p.size() ? prob(c.cand_p[size_t(r)]) : QStringLiteral("-")));
    table_->setItem(
        r, kTargetRank,
        cellItem(at >= 0 ? QString::number(at + 1)
                         : (n > 0 ? QStringLiteral("> %1").arg(n) : QStringLiteral("-"))));
    QString mark;
    if (committed) mark = c.drafted ? tr("accepted") : tr("sampled by the target");
    auto* m = new QTableWidgetItem(mark);
    m->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    table_->setItem(r, kMark, m);
    if (committed && c.drafted) {
      for (int k = 0; k < kColumns; ++k) {
        table_->item(r, k)->setBackground(QColor(kGreen.red(), kGreen.green(), kGreen.blue(), 60));
      }
    }
  }
  cands_->setData(qvec(bars.cand_x), qvec(bars.cand_p), true);
  table_->resizeColumnsToContents();

  const QString top1 =
      c.top1 >= 0.01f ? QString::number(c.top1, 'f', 2) : QString::number(c.top1, 'g', 2);
  QString head = tr("Cell %1").arg(cellName(c.cell, gridW));
  if (!method.isEmpty()) head += QStringLiteral(" (%1)").arg(method);
  head += tr(": token %1 %2; rank %3 of the target; %4 region: top-1 %5")
              .arg(c.token)
              .arg(c.drafted ? tr("drafted and accepted") : tr("sampled by the target"))
              .arg(c.target_rank + 1)
              .arg(QString::fromLatin1(decode::region_character(c.top1)))
              .arg(top1);
  headline_->setText(head);
  applyScale();
}

void DistributionView::applyScale() {
  QCPAxis* y = plot_->yAxis;
  if (log_box_->isChecked()) {
    double lo = kLogFloor;
    if (min_p_ > 0)
      lo = std::max(kLogMin, std::min(lo, std::pow(10.0, std::floor(std::log10(min_p_)))));
    y->setScaleType(QCPAxis::stLogarithmic);
    y->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    y->setRange(lo, kLogTop);
    // Bars grow from the axis floor: a base of 0 has no place on a log axis.
    others_->setBaseValue(lo);
    committed_->setBaseValue(lo);
  } else {
    y->setScaleType(QCPAxis::stLinear);
    y->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    y->setRange(0, max_p_ > 0 ? max_p_ * 1.15 : 1.0);
    others_->setBaseValue(0);
    committed_->setBaseValue(0);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

int DistributionView::barCount() const {
  return others_->dataCount() + committed_->dataCount();
}
int DistributionView::candidateRows() const {
  return table_->rowCount();
}
bool DistributionView::logScale() const {
  return plot_->yAxis->scaleType() == QCPAxis::stLogarithmic;
}
QString DistributionView::headline() const {
  return headline_->text();
}

QString DistributionView::showCell(const RunState& rs, int cell) {
  if (const auto* c = rs.cellTrace(cell); c && rs.filled(cell)) {
    setCell(*c, rs.gridW(), method_label(rs.method()));
    return {};
  }
  clear();
  if (!rs.filled(cell))
    return tr("Cell (%1, %2) is not generated yet.").arg(cell / rs.gridW()).arg(cell % rs.gridW());
  if (vectors_) return tr("A vector token has no codebook distribution to show.");
  return tr(
      "This run has no step traces (Run ▸ Record Step Traces), so the distribution at a "
      "cell was not kept.");
}

}  // namespace adtree::ui
