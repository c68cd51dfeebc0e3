#include "ui/panels/plot_panel.h"

#include <QHBoxLayout>
#include "ui/views/plot_style.h"
#include "ui/views/qcp.h"

namespace adtree::ui {

namespace {
const QColor kBlue(0x3b, 0x82, 0xf6), kOrange(0xf5, 0x9e, 0x0b), kGreen(0x10, 0xb9, 0x81);
}

PlotPanel::PlotPanel(QWidget* parent) : QWidget(parent) {
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  row->setSpacing(4);
  per_step_ = makePlot(tr("Tokens per step"), tr("step"), tr("tokens"),
                       tr("Tokens committed by each decoding step (accepted drafts + 1).\nPlain AR "
                          "commits exactly 1; a good draft tree commits several."));
  shape_ = makePlot(tr("Tree shape per step"), tr("step"), tr("d, k"),
                    tr("Depth d (draft levels) and width k of the draft tree used at each step.\n"
                       "ADT-Tree adapts them step by step; static and dynamic trees keep them "
                       "fixed; AR has no tree (0)."));
  speed_ = makePlot(tr("Speed"), tr("time (s)"), tr("tokens/s"),
                    tr("Tokens committed per second over the last 0.25 s of the run."));
  for (auto* ax : {speed_->xAxis, speed_->yAxis}) {
    ax->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    ax->ticker()->setTickCount(4);
  }
  hist_ = makePlot(tr("Acceptance lengths"), tr("tokens/step"), tr("steps"),
                   tr("How many steps committed 1, 2, 3, ... tokens. The mean is tau."));
  for (auto* p : {per_step_, shape_, speed_, hist_}) row->addWidget(p, 1);

  committed_ = per_step_->addGraph();
  committed_->setPen(QPen(kBlue, 1.5));
  committed_->setLineStyle(QCPGraph::lsStepCenter);
  committed_->setBrush(QColor(kBlue.red(), kBlue.green(), kBlue.blue(), 50));

  depth_ = shape_->addGraph();
  depth_->setName(tr("depth d"));
  depth_->setPen(QPen(kBlue, 1.5));
  depth_->setLineStyle(QCPGraph::lsStepLeft);
  width_ = shape_->addGraph();
  width_->setName(tr("width k"));
  width_->setPen(QPen(kOrange, 1.5));
  width_->setLineStyle(QCPGraph::lsStepLeft);
  // The legend in a row of its own under the title, side by side: inside the axis rect it would
  // cover the lines, which start at the top.
  auto* legend = shape_->legend;
  legend->setVisible(true);
  legend->setFont(QFont(font().family(), std::max(6, font().pointSize() - 2)));
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  legend->setTextColor(palette().color(QPalette::WindowText));
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setMargins(QMargins(0, 0, 0, 0));
  shape_->axisRect()->insetLayout()->take(legend);
  shape_->plotLayout()->insertRow(1);
  shape_->plotLayout()->addElement(1, 0, legend);
  shape_->plotLayout()->setRowStretchFactor(1, 0.001);

  rate_ = speed_->addGraph();
  rate_->setPen(QPen(kGreen, 1.5));

  bars_ = new QCPBars(hist_->xAxis, hist_->yAxis);
  bars_->setWidth(0.8);
  bars_->setPen(QPen(kBlue.darker(130)));
  bars_->setBrush(kBlue);
  QSharedPointer<QCPAxisTickerFixed> t(new QCPAxisTickerFixed);
  t->setTickStep(1);
  t->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  t->setTickCount(6);
  hist_->xAxis->setTicker(t);
}

QCustomPlot* PlotPanel::makePlot(const QString& title, const QString& xLabel, const QString& yLabel,
                                 const QString& help) {
  auto* p = makeStyledPlot(this, title, help);
  p->setMinimumSize(150, 120);
  p->xAxis->setLabel(xLabel);
  // Steps, tokens and tree sizes are whole numbers: ticks at multiples of 1, 2, 5, 10, ...; few of
  // them, since the plots are short.
  QSharedPointer<QCPAxisTickerFixed> whole(new QCPAxisTickerFixed);
  whole->setTickStep(1);
  whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  whole->setTickCount(4);
  p->xAxis->setTicker(whole);
  p->yAxis->setTicker(whole);
  p->yAxis->setLabel(yLabel);
  p->yAxis->setRange(0, 1);
  p->xAxis->setRange(0, 1);
  return p;
}

void PlotPanel::refresh(const RunState& run) {
  if (run.version() == drawn_version_) return;
  drawn_version_ = run.version();
  const auto& x = run.stepIndex();
  committed_->setData(x, run.stepCommitted(), true);
  depth_->setData(x, run.stepDepth(), true);
  width_->setData(x, run.stepWidth(), true);
  rate_->setData(run.stepSeconds(), run.stepRate(), true);
  QVector<double> keys, counts;
  for (auto it = run.acceptHistogram().cbegin(); it != run.acceptHistogram().cend(); ++it) {
    keys << it.key();
    counts << it.value();
  }
  bars_->setData(keys, counts, true);

  const double steps = std::max(1.0, double(x.size()));
  auto max_of = [](const QVector<double>& v, double floor) {
    double m = floor;
    for (double d : v) m = std::max(m, d);
    return m;
  };
  per_step_->xAxis->setRange(0, steps);
  per_step_->yAxis->setRange(0, max_of(run.stepCommitted(), 1.0) * 1.15 + 0.2);
  shape_->xAxis->setRange(0, steps);
  shape_->yAxis->setRange(
      0, std::max(max_of(run.stepDepth(), 1.0), max_of(run.stepWidth(), 1.0)) * 1.15 + 0.5);
  const auto& secs = run.stepSeconds();
  speed_->xAxis->setRange(0, std::max(0.1, secs.isEmpty() ? 0.1 : secs.back()));
  speed_->yAxis->setRange(0, max_of(run.stepRate(), 1.0) * 1.15);
  hist_->xAxis->setRange(0.4, std::max(2.0, keys.isEmpty() ? 1.0 : keys.back()) + 0.6);
  hist_->yAxis->setRange(0, max_of(counts, 1.0) * 1.15);
  for (auto* p : {per_step_, shape_, speed_, hist_}) p->replot(QCustomPlot::rpQueuedReplot);
}

int PlotPanel::tokensPerStepPoints() const {
  return committed_->dataCount();
}
int PlotPanel::treeShapePoints() const {
  return depth_->dataCount() + width_->dataCount();
}
int PlotPanel::speedPoints() const {
  return rate_->dataCount();
}
int PlotPanel::histogramBars() const {
  return bars_->dataCount();
}

double PlotPanel::replotCostMs() const {
  double ms = 0;
  for (auto* p : {per_step_, shape_, speed_, hist_}) ms += p->replotTime(true);
  return ms;
}

}  // namespace adtree::ui
