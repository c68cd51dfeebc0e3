// Figure 5: simple against complex regions. From one traced run: the target's top-16 distribution
// at the most confident token and at a typical unconfident one (the median of the lowest tenth by
// top-1), with the committed token and the draft's candidates marked; and how top-1 is spread over
// all tokens, split by whether the token came from the draft or from the target.
#include <QFileInfo>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "app/adtree-figures/figures.h"
#include "ui/views/qcp.h"

namespace adtree::figures {

namespace {

QVector<double> qvec(const std::vector<double>& v) {
  return QVector<double>(v.begin(), v.end());
}

QString prob(double p) {
  return p >= 0.01 ? QString::number(p, 'f', 3) : QString::number(p, 'g', 2);
}

// One cell's top-N target distribution as bars, the committed token green, draft candidates marked.
QPixmap distributionPanel(const decode::CellTrace& c, const decode::CellGrids& g,
                          const QString& title, QSize size) {
  const int64_t gridW = g.w();
  const decode::TopBars bars = decode::top_bars(c);
  const int n = bars.n;
  const double top = bars.max_p;
  QVector<double> ticks;
  QVector<QString> labels;
  for (int i = 0; i < n; ++i) {
    ticks << i + 1;
    labels << QString::number(c.top_tokens[size_t(i)]);
  }
  const int outside = int(std::count(bars.cand_bar.begin(), bars.cand_bar.end(), -1));
  QString outcome;
  if (c.cand_tokens.empty()) {
    outcome = QStringLiteral("no draft here: sampled by the target");
  } else if (c.drafted) {
    outcome = QStringLiteral("draft candidate accepted");
    if (g.filled(c.cell)) {
      outcome += QStringLiteral(" (tree depth %1, draft rank %2)")
                     .arg(g.at(c.cell).depth)
                     .arg(g.at(c.cell).rank + 1);
    }
  } else {
    outcome = QStringLiteral("draft rejected: sampled by the target");
  }
  QString sub = QStringLiteral("cell %1 · top-1 %2 · committed token %3 (target rank %4)")
                    .arg(cellName(c.cell, gridW), prob(c.top1))
                    .arg(c.token)
                    .arg(c.target_rank + 1);
  sub += QStringLiteral("\n") + outcome;
  if (!c.cand_tokens.empty()) {
    sub += QStringLiteral(" · %1 draft candidates%2")
               .arg(c.cand_tokens.size())
               .arg(outside ? QStringLiteral(" (%1 beyond the top %2)").arg(outside).arg(n)
                            : QString());
  }
  QCustomPlot p;
  stylePlot(&p, title, sub);
  auto* others = new QCPBars(p.xAxis, p.yAxis);
  others->setName(QStringLiteral("target probability"));
  others->setWidth(0.75);
  others->setPen(QPen(kBlue.darker(130)));
  others->setBrush(kBlue);
  others->setData(qvec(bars.other_x), qvec(bars.other_p), true);
  auto* committed = new QCPBars(p.xAxis, p.yAxis);
  committed->setName(QStringLiteral("committed token"));
  committed->setWidth(0.75);
  committed->setPen(QPen(kGreen.darker(140)));
  committed->setBrush(kGreen);
  committed->setData(qvec(bars.committed_x), qvec(bars.committed_p), true);
  auto* cands = p.addGraph();
  cands->setName(QStringLiteral("draft candidate"));
  cands->setLineStyle(QCPGraph::lsNone);
  cands->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted,
                                         QPen(kOrange.darker(150), 1.2), QBrush(kOrange), 11));
  // The markers float just above their bars.
  QVector<double> above = qvec(bars.cand_p);
  for (auto& v : above) v += top * 0.045;
  cands->setData(qvec(bars.cand_x), above, true);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  ticker->setTicks(ticks, labels);
  p.xAxis->setTicker(ticker);
  p.xAxis->setTickLabelRotation(-90);
  p.xAxis->setSubTicks(false);
  p.xAxis->grid()->setVisible(false);
  p.xAxis->setRange(0.4, std::max(1, n) + 0.6);
  p.yAxis->setRange(0, top > 0 ? std::min(1.05, top * 1.2) : 1.0);
  p.xAxis->setLabel(
      QStringLiteral("the target's top %1 tokens, most likely first (tick: token id)").arg(n));
  p.yAxis->setLabel(QStringLiteral("target probability"));
  p.legend->setVisible(true);
  p.axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  return renderPanel(&p, size);
}

// The first run with step traces; null, with the reason in *skip, when none has them.
const Run* tracedRun(const std::vector<Run>& runs, QString* skip) {
  for (const Run& r : runs) {
    if (r.hasTraces()) return &r;
  }
  QStringList names;
  for (const Run& r : runs) names << r.path;
  *skip = runs.empty()
              ? QStringLiteral("no statistics files given")
              : QStringLiteral(
                    "%1: no step traces (make the run with adtree generate --stats F --trace)")
                    .arg(names.join(QStringLiteral(", ")));
  return nullptr;
}

// Every traced cell that kept its target distribution, by top-1 ascending (ties in trace order).
std::vector<const decode::CellTrace*> cellsByTop1(const Run& run) {
  std::vector<const decode::CellTrace*> cells;
  for (const auto& t : run.stats.traces) {
    for (const auto& c : t.cells) {
      if (!c.top_probs.empty()) cells.push_back(&c);
    }
  }
  std::stable_sort(
      cells.begin(), cells.end(),
      [](const decode::CellTrace* a, const decode::CellTrace* b) { return a->top1 < b->top1; });
  return cells;
}

// The top-1 of every generated token, split by where it came from.
struct Top1ByOrigin {
  std::vector<double> drafted, sampled;  // accepted from the draft (depth > 0); sampled (depth 0)
  double max = 0;
};

Top1ByOrigin top1ByOrigin(const decode::CellGrids& g) {
  Top1ByOrigin s;
  for (int64_t cell = 0; cell < g.h() * g.w(); ++cell) {
    if (!g.filled(cell)) continue;
    const double t = g.at(cell).top1;
    s.max = std::max(s.max, t);
    (g.at(cell).depth > 0 ? s.drafted : s.sampled).push_back(t);
  }
  return s;
}

// The histogram's right end: 1, or a round ceiling when every top-1 is small (a random model's sit
// near 1/V), so the bars do not crowd into the first bin.
double top1AxisEnd(double maxTop1) {
  if (maxTop1 < 0.2 && maxTop1 > 0) {
    const double e = std::pow(10.0, std::floor(std::log10(maxTop1)));
    return std::ceil(maxTop1 / e) * e;
  }
  return 1.0;
}

// Token counts per top-1 bin over [0, hi], drafted and sampled apart (they are stacked).
struct Top1Histogram {
  double width = 0;  // of one bin
  QVector<double> keys, drafted, sampled;
};

Top1Histogram binTop1(const Top1ByOrigin& s, double hi, int bins) {
  Top1Histogram h;
  h.width = hi / bins;
  h.drafted = h.sampled = QVector<double>(bins, 0);
  for (int i = 0; i < bins; ++i) h.keys << (i + 0.5) * h.width;
  auto binOf = [&](double t) { return std::clamp(int(t / h.width), 0, bins - 1); };
  for (double t : s.drafted) h.drafted[binOf(t)] += 1;
  for (double t : s.sampled) h.sampled[binOf(t)] += 1;
  return h;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

QString top1Subtitle(const Top1ByOrigin& s) {
  const double mdD = median(s.drafted), mdS = median(s.sampled);
  return QStringLiteral(
             "median top-1: drafted %1 (%2 tokens) · sampled by the target %3 (%4 tokens)")
      .arg(std::isnan(mdD) ? QStringLiteral("-") : prob(mdD))
      .arg(s.drafted.size())
      .arg(std::isnan(mdS) ? QStringLiteral("-") : prob(mdS))
      .arg(s.sampled.size());
}

QCPBars* countBars(QCustomPlot* p, const QString& name, const Top1Histogram& h,
                   const QVector<double>& counts, const QColor& colour) {
  auto* bars = new QCPBars(p->xAxis, p->yAxis);
  bars->setName(name);
  bars->setWidth(h.width * 0.9);
  bars->setPen(QPen(colour.darker(130)));
  bars->setBrush(colour);
  bars->setData(h.keys, counts, true);
  return bars;
}

// A dashed line at one example cell's top-1, labelled (a) or (b), the label on the side given.
void markCell(QCustomPlot* p, const decode::CellTrace& cell, const QString& name, double yTop,
              Qt::Alignment side) {
  auto* line = new QCPItemStraightLine(p);
  line->point1->setCoords(cell.top1, 0);
  line->point2->setCoords(cell.top1, 1);
  line->setPen(QPen(QColor(0xef, 0x44, 0x44), 1.5, Qt::DashLine));
  auto* label = new QCPItemText(p);
  label->position->setType(QCPItemPosition::ptPlotCoords);
  label->position->setCoords(cell.top1, yTop * 0.97);
  label->setPositionAlignment(Qt::AlignTop | side);
  label->setText(name);
  label->setColor(QColor(0xb9, 0x1c, 0x1c));
  label->setFont(QFont(QStringLiteral("DejaVu Sans"), 9, QFont::Bold));
  label->setPadding(QMargins(4, 0, 4, 0));
}

// The legend beside the plot, where the (a) / (b) markers cannot run into it
// (at the top of a side column: a spacer row under it takes the rest of the height).
void legendBeside(QCustomPlot* p) {
  p->legend->setVisible(true);
  p->axisRect()->insetLayout()->take(p->legend);
  auto* side = new QCPLayoutGrid;
  p->plotLayout()->addElement(p->plotLayout()->rowCount() - 1, 1, side);
  p->plotLayout()->setColumnStretchFactor(1, 0.001);
  side->addElement(0, 0, p->legend);
  side->addElement(1, 0, new QCPLayoutElement(p));
  side->setRowStretchFactor(0, 0.001);
  side->setMargins(QMargins(10, 12, 8, 0));
}

// (c) top-1 over all tokens, stacked: sampled by the target below, drafted above, with where the
// cells of (a) and (b) fall.
QPixmap top1Panel(const decode::CellGrids& g, const decode::CellTrace& simple,
                  const decode::CellTrace& hard, QSize size) {
  const Top1ByOrigin s = top1ByOrigin(g);
  const double hi = top1AxisEnd(s.max);
  const int bins = 20;
  const Top1Histogram h = binTop1(s, hi, bins);
  QCustomPlot p;
  stylePlot(&p,
            QStringLiteral("(c) Top-1 probability over all %1 tokens")
                .arg(s.drafted.size() + s.sampled.size()),
            top1Subtitle(s));
  auto* sampled =
      countBars(&p, QStringLiteral("sampled by the target (depth 0)"), h, h.sampled, kGrey);
  auto* drafted =
      countBars(&p, QStringLiteral("drafted and accepted (depth > 0)"), h, h.drafted, kBlue);
  drafted->moveAbove(sampled);
  double top = 0;
  for (int i = 0; i < bins; ++i) top = std::max(top, h.drafted[i] + h.sampled[i]);
  const double yTop = std::max(1.0, top * 1.15);
  p.xAxis->setRange(0, hi);
  p.yAxis->setRange(0, yTop);
  p.xAxis->setLabel(QStringLiteral("target top-1 probability of the token"));
  p.yAxis->setLabel(QStringLiteral("tokens"));
  p.xAxis->grid()->setVisible(false);
  markCell(&p, simple, QStringLiteral("(a)"), yTop, Qt::AlignRight);
  // With a single traced cell (b) is (a): its label then sits on (a)'s side too.
  markCell(&p, hard, QStringLiteral("(b)"), yTop,
           &hard == &simple ? Qt::AlignRight : Qt::AlignLeft);
  legendBeside(&p);
  return renderPanel(&p, size);
}

}  // namespace

bool figure5(const std::vector<Run>& runs, const QString& path, QString* skip) {
  const Run* run = tracedRun(runs, skip);
  if (!run) return false;
  const auto cells = cellsByTop1(*run);
  if (cells.empty()) {
    *skip = QStringLiteral("%1: the traces hold no target distributions").arg(run->path);
    return false;
  }
  // (a) the most confident cell; (b) a typical unconfident one: the median of the lowest tenth.
  const decode::CellTrace* simple = cells.back();
  const size_t decile = std::max<size_t>(1, cells.size() / 10);
  const decode::CellTrace* hard = cells[decile / 2];
  const auto& g = run->stats.grids;

  Canvas canvas(QStringLiteral("Fig. 5 — simple vs complex regions: the target's distribution"),
                QStringLiteral("%1, prompt \"%2\" (%3)")
                    .arg(run->label(), run->prompt, QFileInfo(run->path).fileName()));
  const QRect a = canvas.cell(0, 0, 2, 2), b = canvas.cell(0, 1, 2, 2),
              c = canvas.span(1, 2, 0, 1, 2);
  canvas.place(a,
               distributionPanel(*simple, g, QStringLiteral("(a) Simple region: the highest top-1"),
                                 a.size()));
  canvas.place(
      b, distributionPanel(*hard, g,
                           QStringLiteral("(b) Complex region: median of the lowest 10% by top-1"),
                           b.size()));
  canvas.place(c, top1Panel(g, *simple, *hard, c.size()));
  canvas.save(path);
  return true;
}

}  // namespace adtree::figures
