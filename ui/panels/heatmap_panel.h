// HeatmapPanel: one QCustomPlot colour map per token-cell statistic (SPEC_DECODING.md 7):
// acceptance depth, target top-1 probability, acceptance length, and the ADT tree shape (d, k).
// Each has its own colour scale, no interpolation (one flat square per token) and the checkerboard
// for cells not yet generated. Hovering a map reports the cell, so the window can highlight it
// everywhere.
#pragma once
#include <QLabel>
#include <QVector>
#include <QWidget>

#include "ui/runs/run_state.h"

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QCPTextElement;

namespace adtree::ui {

class HeatmapPanel : public QWidget {
  Q_OBJECT

 public:
  explicit HeatmapPanel(QWidget* parent = nullptr);

  // Redraws the maps from the run if it changed since the last call.
  void refresh(const RunState& run);
  void setHighlight(int cell);
  void setHoverText(const QString& text);
  // The model's tokens are vectors (the continuous family): the top-1 map shows CSpD's acceptance
  // probability instead (a diffusion head has no top-1 probability); codes: the top-1 map.
  void setVectorTokens(bool vectors);
  // Cells drawn in map m (for tests): NaN-free cells of the colour map's data.
  int filledCells(RunState::Map m) const;
  QCustomPlot* plot(RunState::Map m) const { return maps_[m].plot; }
  // The cell under a point of map m's plot (-1 outside the grid), as a click there would pick it.
  int cellAt(RunState::Map m, const QPointF& pos) const;
  // Writes map m (title, colour scale) as PNG at twice its size on screen; false if not written.
  bool saveMapPng(RunState::Map m, const QString& path) const;
  // Sum over the maps of QCustomPlot's average replot time (ms): the cost of one refresh.
  double replotCostMs() const;

 Q_SIGNALS:
  void cellHovered(int cell);
  void cellClicked(int cell);  // left click on a cell of any map (the token distribution view)

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct MapView {
    QCustomPlot* plot = nullptr;
    QCPColorMap* checker = nullptr;  // beneath the map: shows through NaN (not generated) cells
    QCPColorMap* map = nullptr;
    QCPColorScale* scale = nullptr;
    QCPItemRect* highlight = nullptr;
    QCPTextElement* title = nullptr;
  };
  void setupMap(RunState::Map m, const QString& title, const QString& unit, const QString& help);
  void applyRange(RunState::Map m, double lo, double hi, bool integer);
  void applyOriginScale(bool vectors = false);  // the Origin map's named colours
  void hoverAt(QCustomPlot* plot, const QPointF& pos);
  // Square cells: widen the axis range that has room to spare (called after each layout).
  void fitTitles();
  void fitSquare(MapView& v);
  void resizeGrid(MapView& v, int h, int w);

  MapView maps_[RunState::MapCount];
  QLabel* hover_ = nullptr;
  int grid_h_ = 0, grid_w_ = 0;
  quint64 drawn_version_ = ~quint64(0);
  int highlight_ = -1, hovered_ = -1;
  bool vectors_ = false;  // the loaded model's tokens are vectors (setVectorTokens)
};

}  // namespace adtree::ui
