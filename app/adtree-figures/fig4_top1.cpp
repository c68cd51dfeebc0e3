// Figure 4: the target's top-1 probability at every token of the image (the paper's Fig. 4b),
// beside the acceptance length of the step that produced each token, and the picture itself where
// its PNG lies next to the statistics file (the paper's Fig. 4a).
#include <QImageReader>

#include <algorithm>
#include <cmath>

#include "app/adtree-figures/figures.h"
#include "ui/views/qcp.h"

namespace adtree::figures {

namespace {

// The picture, nearest-neighbour scaled into a square under a caption, on white.
QPixmap imagePanel(const Run& r, QSize size, const QString& title) {
  QPixmap px(size);
  px.fill(Qt::white);
  QPainter painter(&px);
  painter.setRenderHint(QPainter::TextAntialiasing);
  QFont bold(QStringLiteral("DejaVu Sans"), 11);
  bold.setBold(true);
  painter.setFont(bold);
  painter.setPen(Qt::black);
  const int titleH = QFontMetrics(bold).height() + 8;
  painter.drawText(QRect(0, 4, size.width(), titleH), Qt::AlignCenter, title);
  QFont small(QStringLiteral("DejaVu Sans"), 9);
  painter.setFont(small);
  painter.setPen(QColor(0x37, 0x41, 0x51));
  const int subH = QFontMetrics(small).height() + 4;
  const QString prompt =
      r.prompt.isEmpty() ? QStringLiteral("(no prompt)") : QStringLiteral("\"%1\"").arg(r.prompt);
  painter.drawText(QRect(0, 4 + titleH, size.width(), subH), Qt::AlignCenter, prompt);
  const QImage img(r.imagePath);
  const int side = std::min(size.width() - 40, size.height() - titleH - subH - 40);
  const QRect target((size.width() - side) / 2, titleH + subH + 16, side, side);
  if (img.isNull() || side <= 0) {
    painter.drawText(target, Qt::AlignCenter, QStringLiteral("(the picture could not be read)"));
  } else {
    painter.drawImage(target, img.scaled(side, side, Qt::KeepAspectRatio, Qt::FastTransformation));
    painter.setPen(QPen(QColor(0x9c, 0xa3, 0xaf)));
    painter.drawRect(target.adjusted(0, 0, -1, -1));
  }
  return px;
}

// What every panel shares: whether any run has a picture, and the two colour scales.
struct Scales {
  bool images = false;
  double top1Hi = 1.0;
  int maxLen = 2;
};

// One probability scale for every panel: 0..1, unless the model is so flat (a random one) that
// the colours would all be dark; then up to the largest value, rounded up.
double top1Ceiling(double maxTop1) {
  double top1Hi = 1.0;
  if (maxTop1 < 0.2 && maxTop1 > 0) {
    const double e = std::pow(10.0, std::floor(std::log10(maxTop1)));
    top1Hi = std::ceil(maxTop1 / e) * e;
  }
  return top1Hi;
}

Scales scanRuns(const std::vector<Run>& runs, int n) {
  Scales s;
  double maxTop1 = 0;
  for (int i = 0; i < n; ++i) {
    const Run& r = runs[size_t(i)];
    s.images = s.images || !r.imagePath.isEmpty();
    const auto& g = r.stats.grids;
    for (int64_t c = 0; c < g.h() * g.w(); ++c) {
      if (!g.filled(c)) continue;
      maxTop1 = std::max(maxTop1, double(g.at(c).top1));
      s.maxLen = std::max(s.maxLen, int(g.at(c).accept_len));
    }
  }
  s.top1Hi = top1Ceiling(maxTop1);
  return s;
}

QString figure4Note(const std::vector<Run>& runs) {
  QString note = QStringLiteral(
      "top-1: the target's largest probability at the token (after CFG; the T = 1 softmax "
      "when greedy) · acceptance length: tokens committed by the step that made it");
  if (runs.size() > 2) note += QStringLiteral(" · first 2 of %1 runs").arg(runs.size());
  return note;
}

// "mean M · P% of tokens with top-1 ≥ 0.5" over the filled cells.
QString top1Subtitle(const decode::CellGrids& g) {
  double sum = 0;
  int64_t filled = 0, confident = 0;
  for (int64_t c = 0; c < g.h() * g.w(); ++c) {
    if (!g.filled(c)) continue;
    sum += g.at(c).top1;
    ++filled;
    if (g.at(c).top1 >= 0.5f) ++confident;
  }
  return QStringLiteral("mean %1 · %2% of tokens with top-1 ≥ 0.5")
      .arg(num(filled ? sum / double(filled) : 0.0))
      .arg(num(filled ? 100.0 * double(confident) / double(filled) : 0.0, 0));
}

QPixmap top1Panel(const Run& r, char letter, double top1Hi, QSize size) {
  const auto& g = r.stats.grids;
  QCustomPlot p;
  stylePlot(&p, QStringLiteral("(%1) Top-1 probability · %2").arg(letter).arg(r.label()),
            top1Subtitle(g));
  addCellMap(
      &p, int(g.h()), int(g.w()),
      [&](int row, int c) {
        const int64_t cell = int64_t(row) * g.w() + c;
        return g.filled(cell) ? double(g.at(cell).top1) : std::nan("");
      },
      QStringLiteral("target top-1 probability"), 0, top1Hi, false);
  return renderPanel(&p, size, true);
}

QPixmap acceptPanel(const Run& r, char letter, int maxLen, QSize size) {
  const auto& g = r.stats.grids;
  QCustomPlot p;
  stylePlot(&p, QStringLiteral("(%1) Acceptance length · %2").arg(letter).arg(r.label()),
            QStringLiteral("τ = %1 tokens per target forward").arg(num(r.stats.summary.tau)));
  addCellMap(
      &p, int(g.h()), int(g.w()),
      [&](int row, int c) {
        const int64_t cell = int64_t(row) * g.w() + c;
        return g.filled(cell) ? double(g.at(cell).accept_len) : std::nan("");
      },
      QStringLiteral("tokens committed by the step"), 1, maxLen, true);
  return renderPanel(&p, size, true);
}

// Row i: the picture (when any run has one), the top-1 map and the acceptance-length map.
void placeRun(Canvas& canvas, const Run& r, int i, int n, const Scales& s, char& letter) {
  const int cols = s.images ? 3 : 2;
  int col = 0;
  if (s.images) {
    const QRect rc = canvas.cell(i, col++, n, cols);
    if (!r.imagePath.isEmpty()) {
      canvas.place(
          rc, imagePanel(r, rc.size(), QStringLiteral("(%1) %2").arg(letter++).arg(r.label())));
    } else {
      canvas.text(rc, QStringLiteral("(no picture beside %1)").arg(r.path),
                  Qt::AlignCenter | Qt::TextWordWrap, 9);
    }
  }
  const QRect top1Rc = canvas.cell(i, col++, n, cols);
  canvas.place(top1Rc, top1Panel(r, letter++, s.top1Hi, top1Rc.size()));
  const QRect acceptRc = canvas.cell(i, col++, n, cols);
  canvas.place(acceptRc, acceptPanel(r, letter++, s.maxLen, acceptRc.size()));
}

}  // namespace

bool figure4(const std::vector<Run>& runs, const QString& path, QString* skip) {
  if (runs.empty()) {
    *skip = QStringLiteral("no statistics files given");
    return false;
  }
  const int n = int(std::min<size_t>(runs.size(), 2));
  const Scales scales = scanRuns(runs, n);
  Canvas canvas(QStringLiteral("Fig. 4 — target top-1 probability map and acceptance-length map"),
                figure4Note(runs));
  char letter = 'a';
  for (int i = 0; i < n; ++i) placeRun(canvas, runs[size_t(i)], i, n, scales, letter);
  canvas.save(path);
  return true;
}

}  // namespace adtree::figures
