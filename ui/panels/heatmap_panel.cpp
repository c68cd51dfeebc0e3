#include "ui/panels/heatmap_panel.h"

#include <QGridLayout>
#include <QMouseEvent>
#include <cmath>
#include "ui/views/qcp.h"

#include "ui/views/colormap.h"

namespace adtree::ui {

namespace {
// The top-1 scale: 1, 0.5, 0.2, 0.1, 0.05, ... whichever first holds the largest value seen. A
// trained model spans most of [0, 1]; a random one stays near 1/V, which a fixed [0, 1] scale would
// paint a single colour.
double niceCeiling(double v) {
  if (!(v > 0)) return 1;
  double best = 1;  // candidates come in falling order: the last that holds v is the smallest
  for (double top = 1; top > 1e-5; top /= 10) {
    for (double f : {1.0, 0.5, 0.2}) {
      if (top * f >= v) best = top * f;
    }
  }
  return best;
}
}  // namespace

HeatmapPanel::HeatmapPanel(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(4);
  setupMap(
      RunState::Depth, tr("Acceptance depth"), tr("level"),
      tr("Depth in the draft tree at which each token was accepted.\n0 = sampled by the target "
         "model itself (root, bonus or residual token);\n1, 2, ... = a draft token accepted at "
         "that level of the tree.\nThe paper's \"image token depth matrix\": bright = the "
         "drafter predicted this region well."));
  setupMap(RunState::Top1, tr("Top-1 probability"), tr("p"),
           tr("The target model's largest probability at each cell (after CFG and temperature).\n"
              "High = the model is sure what comes next (flat regions); low = many tokens are "
              "plausible (texture, edges), where drafts get rejected."));
  setupMap(
      RunState::AcceptLen, tr("Acceptance length"), tr("tokens/step"),
      tr("Tokens committed by the decoding step that produced each cell (accepted drafts + 1).\n"
         "Every cell of one step has the same value; plain AR is always 1."));
  setupMap(RunState::TreeDepth, tr("Drafted depth"), tr("levels"),
           tr("Levels of the draft tree that ran at the step that produced each cell: head "
              "levels and free guesses together.\nCost-aware ADT-Tree drafts only what pays on "
              "this device, often less than its planned d.\nJacobi methods: the window (SJD) or "
              "path length (PathSpec). 0 = no draft (an AR-sized step)."));
  setupMap(RunState::TreeWidth, tr("Drafted width"), tr("nodes"),
           tr("Nodes on the widest level of the draft tree that ran.\n1 = a chain; "
              "Jacobi: the number of chains. 0 = no draft."));
  setupMap(RunState::Origin, tr("Drafted by"), QString(),
           tr("Where each committed token came from: sampled by the target itself (root, bonus "
              "or residual), a draft of the draft head, or a free guess (the code above the cell "
              "or the target's own earlier guess: no draft model ran for it)."));
  setupMap(RunState::PlanDepth, tr("Planned depth d"), tr("levels"),
           tr("Draft levels d the method planned for the step.\nADT-Tree: its adjacency policy, "
              "deeper where drafts are accepted (simple regions), shallower where they are not; "
              "the cost rule may draft less."));
  setupMap(RunState::PlanWidth, tr("Planned width k"), tr("branches"),
           tr("Width k the method planned for the step.\nADT-Tree widens the tree where depth "
              "does not pay (complex regions)."));
  applyOriginScale();
  const RunState::Map layout[3][3] = {
      {RunState::Depth, RunState::Top1, RunState::AcceptLen},
      {RunState::TreeDepth, RunState::TreeWidth, RunState::Origin},
      {RunState::PlanDepth, RunState::PlanWidth, RunState::MapCount}};
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      if (layout[r][c] != RunState::MapCount) grid->addWidget(maps_[layout[r][c]].plot, r, c);
    }
  }
  hover_ = new QLabel(this);
  hover_->setObjectName("hoverInfo");
  hover_->setWordWrap(true);
  hover_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  hover_->setMargin(8);
  hover_->setFrameShape(QFrame::StyledPanel);
  hover_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  setHoverText({});
  grid->addWidget(hover_, 2, 2);
  for (int c = 0; c < 3; ++c) grid->setColumnStretch(c, 1);
  for (int r = 0; r < 3; ++r) grid->setRowStretch(r, 1);
}

void HeatmapPanel::setVectorTokens(bool vectors) {
  auto& v = maps_[RunState::Top1];
  v.title->setText(vectors ? tr("Acceptance probability") : tr("Top-1 probability"));
  v.plot->setToolTip(
      vectors ? tr("CSpD: the probability min(1, r) that each drafted token stood (r: the aligned "
                   "trajectories' density ratio).\n0 where nothing was drafted: the pre-fill, AR "
                   "and the target's token after a round.")
              : tr("The target model's largest probability at each cell (after CFG and "
                   "temperature).\nHigh = the model is sure what comes next (flat regions); low = "
                   "many tokens are plausible (texture, edges), where drafts get rejected."));
  v.plot->replot();
  // CSpD plans no tree: its planned-shape maps would stay empty.
  for (auto m : {RunState::PlanDepth, RunState::PlanWidth}) maps_[m].plot->setVisible(!vectors);
  // The hover text takes their row, rather than a third of it.
  auto* grid = static_cast<QGridLayout*>(layout());
  grid->removeWidget(hover_);
  if (vectors)
    grid->addWidget(hover_, 2, 0, 1, 3);
  else
    grid->addWidget(hover_, 2, 2);
  applyOriginScale(vectors);  // its drafts come from a draft model, never from free guesses
  vectors_ = vectors;
  setHoverText({});
}

void HeatmapPanel::setupMap(RunState::Map m, const QString& title, const QString& unit,
                            const QString& help) {
  auto& v = maps_[m];
  v.plot = new QCustomPlot(this);
  v.plot->setObjectName(QStringLiteral("heatmap%1").arg(int(m)));
  v.plot->setMinimumSize(150, 130);
  v.plot->setToolTip(help);
  v.plot->setBackground(palette().color(QPalette::Base));
  v.plot->setPlottingHint(QCP::phCacheLabels, true);
  v.plot->installEventFilter(this);
  v.plot->setMouseTracking(true);

  v.plot->plotLayout()->insertRow(0);
  v.title =
      new QCPTextElement(v.plot, title, QFont(font().family(), font().pointSize(), QFont::Bold));
  v.title->setTextColor(palette().color(QPalette::WindowText));
  v.plot->plotLayout()->addElement(0, 0, v.title);

  // The map and its colour scale share one cell below the title, so the title spans both.
  auto* rect = v.plot->axisRect();
  auto* body = new QCPLayoutGrid;
  v.plot->plotLayout()->take(rect);
  v.plot->plotLayout()->addElement(1, 0, body);
  body->addElement(0, 0, rect);
  rect->setMinimumMargins(QMargins(2, 2, 2, 2));
  for (auto* ax : {v.plot->xAxis, v.plot->yAxis}) {
    ax->setTicks(false);
    ax->setTickLabels(false);
    ax->grid()->setVisible(false);
    ax->setBasePen(QPen(palette().color(QPalette::Mid)));
  }
  v.plot->yAxis->setRangeReversed(true);  // row 0 at the top, like the image

  // The "not generated yet" checkerboard, two checks per cell side, drawn under the map.
  v.checker = new QCPColorMap(v.plot->xAxis, v.plot->yAxis);
  v.checker->setInterpolate(false);
  v.checker->setTightBoundary(false);
  QCPColorGradient greys;
  greys.clearColorStops();
  const auto tile = checkerBrush(1).texture().toImage();
  greys.setColorStopAt(0, tile.pixelColor(1, 0));
  greys.setColorStopAt(1, tile.pixelColor(0, 0));
  greys.setLevelCount(2);
  v.checker->setGradient(greys);
  v.checker->setDataRange(QCPRange(0, 1));

  v.map = new QCPColorMap(v.plot->xAxis, v.plot->yAxis);
  v.map->setInterpolate(false);
  v.map->setTightBoundary(false);
  v.map->setGradient(viridisGradient());

  v.scale = new QCPColorScale(v.plot);
  body->addElement(0, 1, v.scale);
  v.scale->setType(QCPAxis::atRight);
  v.scale->setBarWidth(10);
  v.scale->axis()->setLabel(unit);
  v.scale->axis()->setTickLabelColor(palette().color(QPalette::WindowText));
  v.scale->axis()->setLabelColor(palette().color(QPalette::WindowText));
  v.scale->axis()->setBasePen(QPen(palette().color(QPalette::Mid)));
  v.scale->axis()->setTickPen(QPen(palette().color(QPalette::Mid)));
  v.scale->axis()->setSubTickPen(Qt::NoPen);
  v.map->setColorScale(v.scale);
  v.map->setGradient(viridisGradient());

  connect(v.plot, &QCustomPlot::afterLayout, this, [this, m] {
    fitTitles();
    fitSquare(maps_[m]);
  });
  resizeGrid(v, 1, 1);

  v.highlight = new QCPItemRect(v.plot);
  v.highlight->setPen(QPen(highlightColor(), 2));
  v.highlight->setBrush(Qt::NoBrush);
  v.highlight->setVisible(false);
  v.highlight->setClipToAxisRect(true);
}

void HeatmapPanel::resizeGrid(MapView& v, int h, int w) {
  h = std::max(h, 1);
  w = std::max(w, 1);
  // Cell centres on integer coordinates: key = column, value = row.
  auto* data = v.map->data();
  data->setSize(w, h);
  data->setRange(QCPRange(0, w - 1), QCPRange(0, h - 1));
  data->fill(std::nan(""));
  auto* checks = v.checker->data();
  checks->setSize(2 * w, 2 * h);
  checks->setRange(QCPRange(-0.25, w - 0.75), QCPRange(-0.25, h - 0.75));
  for (int r = 0; r < 2 * h; ++r) {
    for (int c = 0; c < 2 * w; ++c) checks->setCell(c, r, (r + c) % 2);
  }
  v.plot->xAxis->setRange(-0.5, w - 0.5);
  v.plot->yAxis->setRange(-0.5, h - 0.5);
}

void HeatmapPanel::fitTitles() {
  // In a 1280-pixel window a map is about 170 pixels wide, which clipped long titles ("Acceptance
  // probability") at both ends. One bold size for all, stepped down until every visible title
  // fits its plot's width (7 points at least), so the grid reads as one.
  QFont f(font().family(), font().pointSize(), QFont::Bold);
  auto fits = [&](const QFont& font) {
    for (const auto& v : maps_) {
      if (v.plot && v.plot->isVisible() &&
          QFontMetrics(font).horizontalAdvance(v.title->text()) > v.plot->width() - 6)
        return false;
    }
    return true;
  };
  while (f.pointSize() > 7 && !fits(f)) f.setPointSize(f.pointSize() - 1);
  for (auto& v : maps_) {
    if (v.title && f != v.title->font()) {
      v.title->setFont(f);  // only on a change: it lays the plot out again
      v.plot->replot(QCustomPlot::rpQueuedReplot);
    }
  }
}

void HeatmapPanel::fitSquare(MapView& v) {
  // Square cells: pad the axis rect's margins so the grid fills it exactly. The outer rect does not
  // depend on the margins, so one extra replot settles it.
  const auto* data = v.map->data();
  const double gw = data->keySize(), gh = data->valueSize();
  auto* rect = v.plot->axisRect();
  const QRect outer = rect->outerRect();
  const int pad = 2;
  const double w = outer.width() - 2 * pad, h = outer.height() - 2 * pad;
  if (w <= 0 || h <= 0) return;
  QMargins m(pad, pad, pad, pad);
  if (w / h > gw / gh) {
    const int extra = int(w - h * gw / gh);
    m.setLeft(pad + extra / 2);
    m.setRight(pad + extra - extra / 2);
  } else {
    const int extra = int(h - w * gh / gw);
    m.setTop(pad + extra / 2);
    m.setBottom(pad + extra - extra / 2);
  }
  if (m != rect->margins()) {
    rect->setAutoMargins(QCP::msNone);
    rect->setMargins(m);
    // The colour bar as tall as the map: same top and bottom margins, automatic sides (labels).
    v.scale->setAutoMargins(QCP::msLeft | QCP::msRight);
    v.scale->setMargins(QMargins(0, m.top(), 0, m.bottom()));
    v.plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

void HeatmapPanel::applyRange(RunState::Map m, double lo, double hi, bool integer) {
  auto& v = maps_[m];
  if (integer) {
    // One flat colour per integer value, bands centred on the integers. QCustomPlot picks level
    // int((x - lower) * (levels - 1) / range): with n values over [lo - 0.5, hi + 0.5] (width n),
    // n + 1 levels make that int(x - lo + 0.5), i.e. value lo + j -> level j, each its own colour
    // (n levels would give n values only n - 1 colours: the top two shared one).
    const int values = std::max(2, int(std::lround(hi - lo)) + 1);
    auto g = viridisGradient();
    g.setLevelCount(values + 1);
    v.map->setGradient(g);
    v.map->setDataRange(QCPRange(lo - 0.5, hi + 0.5));
    QSharedPointer<QCPAxisTickerFixed> t(new QCPAxisTickerFixed);
    const double span = hi - lo;
    t->setTickStep(span <= 8 ? 1 : std::ceil(span / 6));
    t->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    v.scale->axis()->setTicker(t);
  } else {
    v.map->setDataRange(QCPRange(lo, hi));
  }
}

void HeatmapPanel::applyOriginScale(bool vectors) {
  // Three categories, three colours that read apart (not a ramp), each named on the scale. As in
  // applyRange's integer maps, n values over [lo - 0.5, hi + 0.5] take n + 1 levels, value j
  // level j, so each name sits in the middle of its band. A continuous model's drafts come from its
  // draft model, never from free guesses: two categories.
  auto& v = maps_[RunState::Origin];
  const int n = vectors ? 2 : 3;
  QCPColorGradient g;
  g.clearColorStops();
  const QColor colours[] = {QColor(0x9e, 0x9e, 0x9e),   // target: grey
                            QColor(0xe6, 0x7e, 0x22),   // head or draft model: orange
                            QColor(0x29, 0x80, 0xb9)};  // free guess: blue
  for (int j = 0; j < n; ++j) g.setColorStopAt(double(j) / n, colours[j]);
  g.setColorStopAt(1.0, colours[n - 1]);
  g.setLevelCount(n + 1);
  g.setNanHandling(QCPColorGradient::nhTransparent);  // cells not generated: the checkerboard
  v.map->setGradient(g);
  v.map->setDataRange(QCPRange(-0.5, n - 0.5));
  QSharedPointer<QCPAxisTickerText> t(new QCPAxisTickerText);
  t->addTick(0, tr("target"));
  t->addTick(1, vectors ? tr("draft") : tr("head"));
  if (!vectors) t->addTick(2, tr("guess"));
  v.scale->axis()->setTicker(t);
  v.plot->replot();
}

void HeatmapPanel::refresh(const RunState& run) {
  if (run.version() == drawn_version_) return;
  drawn_version_ = run.version();
  const int h = run.gridH(), w = run.gridW();
  const bool resized = h != grid_h_ || w != grid_w_;
  grid_h_ = h;
  grid_w_ = w;
  const auto& rg = run.ranges();
  for (int mi = 0; mi < RunState::MapCount; ++mi) {
    auto m = RunState::Map(mi);
    auto& v = maps_[mi];
    auto* data = v.map->data();
    if (resized || data->keySize() != std::max(w, 1) || data->valueSize() != std::max(h, 1)) {
      resizeGrid(v, h, w);
    }
    const auto& vals = run.map(m);
    for (int cell = 0; cell < h * w && cell < vals.size(); ++cell) {
      data->setCell(cell % w, cell / w, vals[cell]);
    }
    switch (m) {
      case RunState::Depth:
        applyRange(m, 0, rg.depth_max, true);
        break;
      case RunState::Top1:
        applyRange(m, 0, niceCeiling(rg.top1_max), false);
        break;
      case RunState::AcceptLen:
        applyRange(m, 1, std::max(2.0, rg.accept_max), true);
        break;
      case RunState::TreeDepth:
        applyRange(m, 0, rg.ran_d_max, true);
        break;
      case RunState::TreeWidth:
        applyRange(m, 0, rg.ran_k_max, true);
        break;
      case RunState::Origin:  // fixed categories (applyOriginScale)
        break;
      case RunState::PlanDepth:
        applyRange(m, rg.tree_d_min, std::max(rg.tree_d_min + 1, rg.tree_d_max), true);
        break;
      case RunState::PlanWidth:
        applyRange(m, rg.tree_k_min, std::max(rg.tree_k_min + 1, rg.tree_k_max), true);
        break;
      default:
        break;
    }
    v.plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

int HeatmapPanel::filledCells(RunState::Map m) const {
  auto* data = maps_[m].map->data();  // cell() is not const in QCustomPlot 2.1
  int n = 0;
  for (int r = 0; r < data->valueSize(); ++r) {
    for (int c = 0; c < data->keySize(); ++c) n += std::isnan(data->cell(c, r)) ? 0 : 1;
  }
  return n;
}

double HeatmapPanel::replotCostMs() const {
  double ms = 0;
  for (const auto& v : maps_) ms += v.plot->replotTime(true);
  return ms;
}

void HeatmapPanel::setHighlight(int cell) {
  if (cell == highlight_) return;
  highlight_ = cell;
  for (auto& v : maps_) {
    const bool on = cell >= 0 && grid_w_ > 0 && cell < grid_w_ * grid_h_;
    v.highlight->setVisible(on);
    if (on) {
      const double c = cell % grid_w_, r = cell / grid_w_;
      v.highlight->topLeft->setCoords(c - 0.5, r - 0.5);
      v.highlight->bottomRight->setCoords(c + 0.5, r + 0.5);
    }
    v.plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

void HeatmapPanel::setHoverText(const QString& text) {
  const QString hatched = vectors_ ? tr("generated, in its vector's approximate colour until "
                                        "decoded.")
                                   : tr("generated, in its code's colour until decoded.");
  hover_->setText(text.isEmpty() ? tr("Hover a cell of the image or of a map to see its values "
                                      "here.\nCheckerboard: not generated yet. Hatched: ") +
                                       hatched
                                 : text);
}

bool HeatmapPanel::saveMapPng(RunState::Map m, const QString& path) const {
  auto* plot = maps_[m].plot;
  // At least a legible size even when the panel is small on screen; twice that for documents.
  return plot->savePng(path, std::max(320, plot->width()), std::max(260, plot->height()), 2.0);
}

int HeatmapPanel::cellAt(RunState::Map m, const QPointF& pos) const {
  const QCustomPlot* plot = maps_[m].plot;
  if (grid_w_ <= 0 || !plot->axisRect()->rect().contains(pos.toPoint())) return -1;
  const int c = int(std::lround(plot->xAxis->pixelToCoord(pos.x())));
  const int r = int(std::lround(plot->yAxis->pixelToCoord(pos.y())));
  return c >= 0 && c < grid_w_ && r >= 0 && r < grid_h_ ? r * grid_w_ + c : -1;
}

void HeatmapPanel::hoverAt(QCustomPlot* plot, const QPointF& pos) {
  int cell = -1;
  for (int m = 0; m < RunState::MapCount; ++m) {
    if (maps_[m].plot == plot) cell = cellAt(RunState::Map(m), pos);
  }
  if (cell != hovered_) {
    hovered_ = cell;
    Q_EMIT cellHovered(cell);
  }
}

bool HeatmapPanel::eventFilter(QObject* watched, QEvent* event) {
  auto* plot = qobject_cast<QCustomPlot*>(watched);
  if (plot) {
    if (event->type() == QEvent::MouseMove) {
      hoverAt(plot, static_cast<QMouseEvent*>(event)->position());
    } else if (event->type() == QEvent::MouseButtonPress &&
               static_cast<QMouseEvent*>(event)->button() == Qt::LeftButton) {
      hoverAt(plot, static_cast<QMouseEvent*>(event)->position());
      if (hovered_ >= 0) Q_EMIT cellClicked(hovered_);
    } else if (event->type() == QEvent::Leave && hovered_ != -1) {
      hovered_ = -1;
      Q_EMIT cellHovered(-1);
    } else if (event->type() == QEvent::ToolTip && hovered_ >= 0) {
      return true;  // the window shows the cell's values instead of the map's help text
    }
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace adtree::ui
