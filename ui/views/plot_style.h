// The one look of the studio's charts (plots, histograms, token distribution): a bold title row,
// the palette's text colour on the axes, mid-grey axis pens and a faint dotted grid, so every
// chart reads the same and follows a dark theme. Heatmaps have their own setup (heatmap_panel).
#pragma once
#include <QString>

class QCustomPlot;
class QWidget;

namespace adtree::ui {

// A new chart in `parent` with `title` above the axes and `help` as its tooltip.
QCustomPlot* makeStyledPlot(QWidget* parent, const QString& title, const QString& help);

}  // namespace adtree::ui
