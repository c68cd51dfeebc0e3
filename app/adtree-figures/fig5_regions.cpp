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

}  // namespace

bool figure5(const std::vector<Run>& runs, const QString& path, QString* skip) {
  const Run* run = nullptr;
  for (const Run& r : runs) {
    if (r.hasTraces()) {
      run = &r;
      break;
    }
  }
  if (!run) {
    QStringList names;
    for (const Run& r : runs) names << r.path;
    *skip = runs.empty()
                ? QStringLiteral("no statistics files given")
                : QStringLiteral(
                      "%1: no step traces (make the run with adtree generate --stats F --trace)")
                      .arg(names.join(QStringLiteral(", ")));
    return false;
  }
  std::vector<const decode::CellTrace*> cells;
  for (const auto& t : run->stats.traces) {
    for (const auto& c : t.cells) {
      if (!c.top_probs.empty()) cells.push_back(&c);
    }
  }
  if (cells.empty()) {
    *skip = QStringLiteral("%1: the traces hold no target distributions").arg(run->path);
    return false;
  }
  std::stable_sort(
      cells.begin(), cells.end(),
      [](const decode::CellTrace* a, const decode::CellTrace* b) { return a->top1 < b->top1; });
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

  // (c) top-1 over all tokens, stacked: sampled by the target below, drafted above.
  double maxTop1 = 0;
  std::vector<double> draftedV, sampledV;
  for (int64_t cell = 0; cell < g.h() * g.w(); ++cell) {
    if (!g.filled(cell)) continue;
    const double t = g.at(cell).top1;
    maxTop1 = std::max(maxTop1, t);
    (g.at(cell).depth > 0 ? draftedV : sampledV).push_back(t);
  }
  double hi = 1.0;
  if (maxTop1 < 0.2 && maxTop1 > 0) {
    const double e = std::pow(10.0, std::floor(std::log10(maxTop1)));
    hi = std::ceil(maxTop1 / e) * e;
  }
  const int bins = 20;
  const double width = hi / bins;
  QVector<double> keys, dCount(bins, 0), sCount(bins, 0);
  for (int i = 0; i < bins; ++i) keys << (i + 0.5) * width;
  auto binOf = [&](double t) { return std::clamp(int(t / width), 0, bins - 1); };
  for (double t : draftedV) dCount[binOf(t)] += 1;
  for (double t : sampledV) sCount[binOf(t)] += 1;
  auto median = [](std::vector<double> v) {
    if (v.empty()) return std::nan("");
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double mdD = median(draftedV), mdS = median(sampledV);
  QString sub =
      QStringLiteral("median top-1: drafted %1 (%2 tokens) · sampled by the target %3 (%4 tokens)")
          .arg(std::isnan(mdD) ? QStringLiteral("-") : prob(mdD))
          .arg(draftedV.size())
          .arg(std::isnan(mdS) ? QStringLiteral("-") : prob(mdS))
          .arg(sampledV.size());
  QCustomPlot p;
  stylePlot(&p,
            QStringLiteral("(c) Top-1 probability over all %1 tokens")
                .arg(draftedV.size() + sampledV.size()),
            sub);
  auto* sampled = new QCPBars(p.xAxis, p.yAxis);
  sampled->setName(QStringLiteral("sampled by the target (depth 0)"));
  sampled->setWidth(width * 0.9);
  sampled->setPen(QPen(kGrey.darker(130)));
  sampled->setBrush(kGrey);
  sampled->setData(keys, sCount, true);
  auto* drafted = new QCPBars(p.xAxis, p.yAxis);
  drafted->setName(QStringLiteral("drafted and accepted (depth > 0)"));
  drafted->setWidth(width * 0.9);
  drafted->setPen(QPen(kBlue.darker(130)));
  drafted->setBrush(kBlue);
  drafted->setData(keys, dCount, true);
  drafted->moveAbove(sampled);
  double top = 0;
  for (int i = 0; i < bins; ++i) top = std::max(top, dCount[i] + sCount[i]);
  p.xAxis->setRange(0, hi);
  p.yAxis->setRange(0, std::max(1.0, top * 1.15));
  p.xAxis->setLabel(QStringLiteral("target top-1 probability of the token"));
  p.yAxis->setLabel(QStringLiteral("tokens"));
  p.xAxis->grid()->setVisible(false);
  // Where the two cells of (a) and (b) fall.
  for (const auto& [cellTrace, name] :
       {std::pair{simple, QStringLiteral("(a)")}, std::pair{hard, QStringLiteral("(b)")}}) {
    auto* line = new QCPItemStraightLine(&p);
    line->point1->setCoords(cellTrace->top1, 0);
    line->point2->setCoords(cellTrace->top1, 1);
    line->setPen(QPen(QColor(0xef, 0x44, 0x44), 1.5, Qt::DashLine));
    auto* label = new QCPItemText(&p);
    label->position->setType(QCPItemPosition::ptPlotCoords);
    label->position->setCoords(cellTrace->top1, std::max(1.0, top * 1.15) * 0.97);
    label->setPositionAlignment(Qt::AlignTop |
                                (cellTrace == simple ? Qt::AlignRight : Qt::AlignLeft));
    label->setText(name);
    label->setColor(QColor(0xb9, 0x1c, 0x1c));
    label->setFont(QFont(QStringLiteral("DejaVu Sans"), 9, QFont::Bold));
    label->setPadding(QMargins(4, 0, 4, 0));
  }
  // The legend beside the plot, where the (a) / (b) markers cannot run into it.
  // (at the top of a side column: a spacer row under it takes the rest of the height).
  p.legend->setVisible(true);
  p.axisRect()->insetLayout()->take(p.legend);
  auto* side = new QCPLayoutGrid;
  p.plotLayout()->addElement(p.plotLayout()->rowCount() - 1, 1, side);
  p.plotLayout()->setColumnStretchFactor(1, 0.001);
  side->addElement(0, 0, p.legend);
  side->addElement(1, 0, new QCPLayoutElement(&p));
  side->setRowStretchFactor(0, 0.001);
  side->setMargins(QMargins(10, 12, 8, 0));
  canvas.place(c, renderPanel(&p, c.size()));
  canvas.save(path);
  return true;
}

}  // namespace adtree::figures
