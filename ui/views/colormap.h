// Colours shared by the panels: a perceptually uniform viridis gradient for every heatmap
// (QCustomPlot 2.1 has no viridis preset, and its rainbow-like presets exaggerate small
// differences), and the one "not generated yet" checkerboard used by the image and the maps alike,
// so a user learns it once.
#pragma once
#include <QBrush>
#include <QColor>

class QCPColorGradient;

namespace adtree::ui {

// Viridis (matplotlib's), from 9 stops; NaN cells are transparent so the checkerboard shows.
QCPColorGradient viridisGradient();
// A tile of two greys; `check` is the side of one square in pixels.
QBrush checkerBrush(int check = 6);
// Cells committed by the engine but not yet decoded into pixels.
QColor pendingCellColor();
// The hover highlight drawn on the image and every map.
QColor highlightColor();

}  // namespace adtree::ui
