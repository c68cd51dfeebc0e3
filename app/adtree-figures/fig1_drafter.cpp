// Figure 1 analogue: how well the draft head learned. The paper compares the training accuracy of
// EAGLE draft heads for text and image models; here: the shipped head's training loss, and its
// top-1 / top-3 accuracy and greedy acceptance rate at each evaluation, on held-out validation
// images and on the target's own held-out samples.
#include <QFileInfo>

#include <cmath>

#include "app/adtree-figures/figures.h"
#include "ui/views/qcp.h"

namespace adtree::figures {

namespace {

void addEvalSeries(QCustomPlot* p, const std::vector<EvalPoint>& evals, bool validation,
                   double EvalPoint::*field, const QString& name, const QColor& color) {
  QVector<double> x, y;
  for (const auto& e : evals) {
    if (validation ? !e.hasValidation : !e.hasSelf) continue;
    const double v = e.*field;
    if (std::isnan(v)) continue;
    x << e.step;
    y << v;
  }
  if (x.isEmpty()) return;
  auto* g = p->addGraph();
  g->setName(name);
  g->setData(x, y, true);
  QPen pen(color, 2.2, validation ? Qt::SolidLine : Qt::DashLine);
  g->setPen(pen);
  g->setScatterStyle(
      QCPScatterStyle(validation ? QCPScatterStyle::ssDisc : QCPScatterStyle::ssSquare,
                      QPen(color.darker(130), 1.2), QBrush(color), 8));
}

// The last step either the loss or the evaluations reached.
int lastLoggedStep(const DrafterLog& L) {
  int lastStep = 0;
  if (!L.loss.empty()) lastStep = std::max(lastStep, L.loss.back().first);
  if (!L.evals.empty()) lastStep = std::max(lastStep, L.evals.back().step);
  return lastStep;
}

// "step S: loss → step S: loss", first and last point of the curve.
QString lossSubtitle(const DrafterLog& L) {
  if (L.loss.empty()) return QStringLiteral("no loss lines in the log");
  return QStringLiteral("step %1: %2  →  step %3: %4")
      .arg(L.loss.front().first)
      .arg(num(L.loss.front().second, 3))
      .arg(L.loss.back().first)
      .arg(num(L.loss.back().second, 3));
}

// (a) the training loss.
QPixmap lossPanel(const DrafterLog& L, int lastStep, QSize size) {
  QCustomPlot p;
  stylePlot(&p, QStringLiteral("(a) Training loss"), lossSubtitle(L));
  QVector<double> x, y;
  double top = 0;
  for (const auto& [s, v] : L.loss) {
    x << s;
    y << v;
    top = std::max(top, v);
  }
  auto* g = p.addGraph();
  g->setData(x, y, true);
  g->setPen(QPen(kBlue, 2));
  p.xAxis->setLabel(QStringLiteral("training step"));
  p.yAxis->setLabel(QStringLiteral("loss (drafter objective)"));
  p.xAxis->setRange(0, std::max(1, lastStep) * 1.02);
  p.yAxis->setRange(0, top > 0 ? top * 1.08 : 1.0);
  // Evaluation steps as faint vertical lines, so both panels line up by eye.
  for (const auto& e : L.evals) {
    auto* line = new QCPItemStraightLine(&p);
    line->point1->setCoords(e.step, 0);
    line->point2->setCoords(e.step, 1);
    line->setPen(QPen(QColor(0x9c, 0xa3, 0xaf), 1, Qt::DashLine));
  }
  return renderPanel(&p, size);
}

// The last evaluation's numbers, validation and/or self-samples.
QString evalSubtitle(const DrafterLog& L) {
  QString sub = QStringLiteral("no evaluations in the log");
  if (L.evals.empty()) return sub;
  const auto& e = L.evals.back();
  if (e.hasValidation) {
    sub = QStringLiteral("step %1, validation: top-1 %2, top-3 %3, accept (T=1) %4")
              .arg(e.step)
              .arg(num(e.valTop1))
              .arg(num(e.valTop3))
              .arg(num(e.valAccept));
  }
  if (e.hasSelf) {
    sub +=
        QStringLiteral("%1self-samples: top-1 %2, top-3 %3, accept %4")
            .arg(e.hasValidation ? QStringLiteral("\n") : QStringLiteral("step %1, ").arg(e.step))
            .arg(num(e.selfTop1))
            .arg(num(e.selfTop3))
            .arg(num(e.selfAccept));
  }
  return sub;
}

// (b) accuracy at each evaluation.
QPixmap evalPanel(const DrafterLog& L, int lastStep, QSize size) {
  QCustomPlot p;
  stylePlot(&p, QStringLiteral("(b) Draft accuracy at each evaluation"), evalSubtitle(L));
  addEvalSeries(&p, L.evals, true, &EvalPoint::valTop1, QStringLiteral("top-1, validation"), kBlue);
  addEvalSeries(&p, L.evals, true, &EvalPoint::valTop3, QStringLiteral("top-3, validation"),
                kGreen);
  addEvalSeries(&p, L.evals, true, &EvalPoint::valAccept,
                QStringLiteral("accept (T=1), validation"), kOrange);
  addEvalSeries(&p, L.evals, false, &EvalPoint::selfTop1, QStringLiteral("top-1, self-samples"),
                kBlue);
  addEvalSeries(&p, L.evals, false, &EvalPoint::selfTop3, QStringLiteral("top-3, self-samples"),
                kGreen);
  addEvalSeries(&p, L.evals, false, &EvalPoint::selfAccept,
                QStringLiteral("accept (T=1), self-samples"), kOrange);
  p.xAxis->setLabel(QStringLiteral("training step"));
  p.yAxis->setLabel(QStringLiteral("share of positions"));
  p.xAxis->setRange(0, std::max(1, lastStep) * 1.02);
  p.yAxis->setRange(0, 1.0);
  p.legend->setVisible(p.graphCount() > 0);
  p.axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
  return renderPanel(&p, size);
}

}  // namespace

bool figure1(const std::optional<DrafterLog>& log, const QString& path, QString* skip) {
  if (!log) {
    *skip = QStringLiteral("no --drafter-log given");
    return false;
  }
  const auto& L = *log;
  QString note = QStringLiteral("drafter training log %1: %2 loss points, %3 evaluations")
                     .arg(QFileInfo(L.path).fileName())
                     .arg(L.loss.size())
                     .arg(L.evals.size());
  Canvas canvas(QStringLiteral("Fig. 1 — draft-head accuracy during training"), note);
  const QRect left = canvas.cell(0, 0, 1, 2), right = canvas.cell(0, 1, 1, 2);
  const int lastStep = lastLoggedStep(L);
  canvas.place(left, lossPanel(L, lastStep, left.size()));
  canvas.place(right, evalPanel(L, lastStep, right.size()));
  canvas.save(path);
  return true;
}

}  // namespace adtree::figures
