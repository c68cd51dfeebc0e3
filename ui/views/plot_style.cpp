#include "ui/views/plot_style.h"

#include "ui/views/qcp.h"

namespace adtree::ui {

QCustomPlot* makeStyledPlot(QWidget* parent, const QString& title, const QString& help) {
  auto* p = new QCustomPlot(parent);
  const QPalette pal = parent->palette();
  const QFont font = parent->font();
  p->setToolTip(help);
  p->setBackground(pal.color(QPalette::Base));
  p->setPlottingHint(QCP::phCacheLabels, true);  // labels repaint often; text layout is costly
  p->plotLayout()->insertRow(0);
  auto* te = new QCPTextElement(p, title, QFont(font.family(), font.pointSize(), QFont::Bold));
  te->setTextColor(pal.color(QPalette::WindowText));
  p->plotLayout()->addElement(0, 0, te);
  const QColor text = pal.color(QPalette::WindowText);
  const QColor mid = pal.color(QPalette::Mid);
  for (auto* ax : {p->xAxis, p->yAxis}) {
    ax->setLabelColor(text);
    ax->setTickLabelColor(text);
    ax->setBasePen(QPen(mid));
    ax->setTickPen(QPen(mid));
    ax->setSubTickPen(QPen(mid));
    ax->grid()->setPen(QPen(QColor(mid.red(), mid.green(), mid.blue(), 80), 1, Qt::DotLine));
    ax->setPadding(2);
    ax->setLabelPadding(2);
  }
  return p;
}

}  // namespace adtree::ui
