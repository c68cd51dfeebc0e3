// Figure 3: (a) how many tokens each decoding step committed (accepted drafts + 1), (b) where the
// accepted draft tokens sat in the draft's own ranking at their level (the smallest width k that
// would still have held them), both as shares, runs pooled by sampling temperature (the paper
// contrasts T = 0 and T = 1).
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>

#include "app/adtree-figures/figures.h"
#include "ui/views/qcp.h"

namespace adtree::figures {

namespace {

struct Group {
  QString name;  // "T = 1"
  QStringList methods;
  int runs = 0;
  std::map<int, double> lengths, ranks;  // value -> count, then share
  int64_t steps = 0, accepted = 0, committed = 0;
};

void toShares(std::map<int, double>& m) {
  double total = 0;
  for (const auto& [k, v] : m) total += v;
  if (total > 0) {
    for (auto& [k, v] : m) v /= total;
  }
}

void drawBars(QCustomPlot* p, const std::vector<Group>& groups, bool lengths, const QString& xLabel,
              const QString& yLabel) {
  auto* barsGroup = new QCPBarsGroup(p);
  barsGroup->setSpacingType(QCPBarsGroup::stAbsolute);
  barsGroup->setSpacing(1);
  const double width = 0.8 / double(std::max<size_t>(1, groups.size()));
  int maxKey = 2;
  double top = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const auto& m = lengths ? g.lengths : g.ranks;
    auto* bars = new QCPBars(p->xAxis, p->yAxis);
    const QColor c = seriesColor(int(i));
    bars->setPen(QPen(c.darker(130)));
    bars->setBrush(c);
    bars->setWidth(width);
    bars->setBarsGroup(barsGroup);
    QVector<double> keys, values;
    for (const auto& [k, v] : m) {
      keys << k;
      values << v;
      maxKey = std::max(maxKey, k);
      top = std::max(top, v);
    }
    bars->setData(keys, values, true);
    const QString what = lengths ? QStringLiteral("%1 steps").arg(g.steps)
                                 : QStringLiteral("%1 accepted draft tokens").arg(g.accepted);
    bars->setName(
        QStringLiteral("%1 — %2 (%3)").arg(g.name, what, g.methods.join(QStringLiteral(", "))));
  }
  QSharedPointer<QCPAxisTickerFixed> whole(new QCPAxisTickerFixed);
  whole->setTickStep(1);
  whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  whole->setTickCount(12);
  p->xAxis->setTicker(whole);
  p->xAxis->setSubTicks(false);
  p->xAxis->grid()->setVisible(false);
  p->xAxis->setRange(0.4, maxKey + 0.6);
  p->yAxis->setRange(0, top * 1.25 + 0.02);  // headroom: the legend sits top right
  p->xAxis->setLabel(xLabel);
  p->yAxis->setLabel(yLabel);
  p->legend->setVisible(true);
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
}

}  // namespace

bool figure3(const std::vector<Run>& runs, const QString& path, QString* skip) {
  if (runs.empty()) {
    *skip = QStringLiteral("no statistics files given");
    return false;
  }
  // Pool the runs by temperature, coldest first; unknown temperatures last.
  std::map<double, Group> byT;
  Group unknown;
  unknown.name = QStringLiteral("T = ?");
  for (const Run& r : runs) {
    Group& g = r.temperature ? byT[std::round(*r.temperature * 1000) / 1000] : unknown;
    g.name = r.temperatureText();
    ++g.runs;
    if (!g.methods.contains(r.methodLabel)) g.methods << r.methodLabel;
    for (const auto& s : r.stats.steps) {
      g.lengths[int(s.committed)] += 1;
      ++g.steps;
      g.committed += s.committed;
    }
    const auto& grids = r.stats.grids;
    for (int64_t c = 0; c < grids.h() * grids.w(); ++c) {
      if (!grids.filled(c) || grids.at(c).depth <= 0) continue;
      g.ranks[grids.at(c).rank + 1] += 1;
      ++g.accepted;
    }
  }
  std::vector<Group> groups;
  for (auto& [t, g] : byT) groups.push_back(g);
  if (unknown.runs > 0) groups.push_back(unknown);
  QStringList meanLen, top1Share;
  for (auto& g : groups) {
    meanLen << QStringLiteral("%1: %2").arg(
        g.name, num(double(g.committed) / double(std::max<int64_t>(1, g.steps))));
    toShares(g.lengths);
    toShares(g.ranks);
    top1Share << QStringLiteral("%1: %2%").arg(
        g.name, g.accepted ? num(100.0 * (g.ranks.count(1) ? g.ranks.at(1) : 0.0), 0)
                           : QStringLiteral("-"));
  }
  QString note = QStringLiteral("%1 run(s) pooled by sampling temperature").arg(runs.size());
  if (groups.size() < 2)
    note += QStringLiteral(" (only one temperature given: add runs at T = 0 and T = 1 to compare)");
  Canvas canvas(
      QStringLiteral("Fig. 3 — acceptance lengths and top-k location of accepted draft tokens"),
      note);
  const QRect left = canvas.cell(0, 0, 1, 2), right = canvas.cell(0, 1, 1, 2);
  {
    QCustomPlot p;
    stylePlot(&p, QStringLiteral("(a) Acceptance length"),
              QStringLiteral("mean tokens per step — %1").arg(meanLen.join(QStringLiteral(", "))));
    drawBars(&p, groups, true, QStringLiteral("tokens committed per step (accepted drafts + 1)"),
             QStringLiteral("share of steps"));
    canvas.place(left, renderPanel(&p, left.size()));
  }
  {
    QCustomPlot p;
    stylePlot(&p, QStringLiteral("(b) Top-k location of accepted draft tokens"),
              QStringLiteral("share at the draft's top-1 — %1")
                  .arg(top1Share.join(QStringLiteral(", "))));
    drawBars(&p, groups, false, QStringLiteral("rank among the draft's candidates (1 = its top-1)"),
             QStringLiteral("share of accepted draft tokens"));
    canvas.place(right, renderPanel(&p, right.size()));
  }
  canvas.save(path);
  return true;
}

}  // namespace adtree::figures
