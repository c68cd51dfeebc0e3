// Figure 2: the "image token depth matrix": for every token of the image, the depth in the draft
// tree at which it was accepted (0 = sampled by the target: the step's root or bonus token). Deep
// runs mark simple regions where a deeper tree pays; shallow ones complex regions.
#include <algorithm>
#include <cmath>

#include "app/adtree-figures/figures.h"
#include "ui/views/qcp.h"

namespace adtree::figures {

bool figure2(const std::vector<Run>& runs, const QString& path, QString* skip) {
  if (runs.empty()) {
    *skip = QStringLiteral("no statistics files given");
    return false;
  }
  const int n = int(std::min<size_t>(runs.size(), 4));
  int maxDepth = 1;
  for (int i = 0; i < n; ++i) {
    const auto& g = runs[size_t(i)].stats.grids;
    for (int64_t c = 0; c < g.h() * g.w(); ++c) {
      if (g.filled(c)) maxDepth = std::max(maxDepth, int(g.at(c).depth));
    }
  }
  QString note = QStringLiteral(
      "depth in the draft tree at which each image token was accepted (0 = sampled by the target); "
      "brighter = deeper");
  if (runs.size() > 4) note += QStringLiteral(" — first 4 of %1 runs").arg(runs.size());
  Canvas canvas(QStringLiteral("Fig. 2 — acceptance-depth matrix"), note);
  const int rows = n <= 2 ? 1 : 2, cols = n == 1 ? 1 : 2;
  for (int i = 0; i < n; ++i) {
    const Run& r = runs[size_t(i)];
    const auto& g = r.stats.grids;
    int64_t drafted = 0, filled = 0;
    double depthSum = 0;
    for (int64_t c = 0; c < g.h() * g.w(); ++c) {
      if (!g.filled(c)) continue;
      ++filled;
      if (g.at(c).depth > 0) {
        ++drafted;
        depthSum += g.at(c).depth;
      }
    }
    const QString sub =
        QStringLiteral("%1 tokens/target forward · %2% of tokens drafted · mean accepted depth %3")
            .arg(num(r.stats.summary.tau))
            .arg(filled ? num(100.0 * double(drafted) / double(filled), 0) : QStringLiteral("0"))
            .arg(drafted ? num(depthSum / double(drafted), 1) : QStringLiteral("-"));
    QCustomPlot p;
    stylePlot(&p, QStringLiteral("(%1) %2").arg(QChar('a' + i)).arg(r.label()), sub);
    addCellMap(
        &p, int(g.h()), int(g.w()),
        [&](int row, int col) {
          const int64_t cell = int64_t(row) * g.w() + col;
          return g.filled(cell) ? double(g.at(cell).depth) : std::nan("");
        },
        QStringLiteral("acceptance depth"), 0, maxDepth, true);
    const QRect rc = canvas.cell(i / cols, i % cols, rows, cols);
    canvas.place(rc, renderPanel(&p, rc.size(), true));
  }
  canvas.save(path);
  return true;
}

}  // namespace adtree::figures
