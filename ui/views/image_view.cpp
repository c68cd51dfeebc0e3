#include "ui/views/image_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <cmath>

#include "model/continuous/token_colours.h"
#include "ui/views/colormap.h"

namespace adtree::ui {

ImageView::ImageView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setToolTip(
      tr("The image as tokens are committed.\nCheckerboard: not generated yet. "
         "Grey: generated, picture coming.\nCtrl+wheel or wheel: zoom (crisp pixels); "
         "double-click: fit."));
}

void ImageView::startRun(int gridH, int gridW, int imageH, int imageW) {
  grid_h_ = gridH;
  grid_w_ = gridW;
  image_h_ = imageH;
  image_w_ = imageW;
  image_ = QImage();
  scaled_ = QPixmap();
  valid_ = committed_ = 0;
  any_order_ = false;
  decoded_.clear();
  hovered_ = -1;
  dirty_ = true;
  update();
}

void ImageView::clear() {
  startRun(grid_h_, grid_w_, image_h_, image_w_);
}

void ImageView::setPreview(const QImage& image, int validCells, const std::vector<int64_t>& cells) {
  image_ = image;
  scaled_ = QPixmap();
  valid_ = validCells;
  any_order_ = !cells.empty();
  decoded_ = QVector<bool>(any_order_ ? grid_h_ * grid_w_ : 0, false);
  for (const auto c : cells)
    if (c >= 0 && c < decoded_.size()) decoded_[int(c)] = true;
  if (image_w_ == 0) {
    image_w_ = image.width();
    image_h_ = image.height();
  }
  dirty_ = true;
}

void ImageView::setCommitted(int cells, const QVector<qint64>& tokens,
                             const QVector<float>& vectors) {
  if (cells == committed_) return;
  committed_ = cells;
  tokens_ = tokens;  // implicitly shared: a copy happens only when the run writes the next step
  vectors_ = vectors;
  dirty_ = true;
}

void ImageView::setVectorColours(const std::vector<float>& map) {
  vector_map_ = map;
  dirty_ = true;
}

void ImageView::setTokenColors(const std::vector<uint8_t>& rgb) {
  palette_.clear();
  palette_.reserve(int(rgb.size() / 3));
  for (size_t i = 0; i + 2 < rgb.size(); i += 3)
    palette_.push_back(qRgb(rgb[i], rgb[i + 1], rgb[i + 2]));
  dirty_ = true;
}

void ImageView::setRunning(bool running) {
  running_ = running;
  dirty_ = true;
}

void ImageView::setHighlight(int cell) {
  if (cell == highlight_) return;
  highlight_ = cell;
  update();  // hover feedback is immediate; Qt merges it with any pending paint
}

void ImageView::setPlaceholder(const QString& text) {
  placeholder_ = text;
  update();
}

void ImageView::setZoom(int zoom) {
  zoom = std::clamp(zoom, 0, 64);
  if (zoom == zoom_) return;
  zoom_ = zoom;
  update();
  Q_EMIT zoomChanged(zoom_);
}

void ImageView::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  update();
}

double ImageView::effectiveScale() const {
  if (image_w_ <= 0 || image_h_ <= 0) return 1;
  if (zoom_ > 0) return zoom_;
  const double fit = std::min(double(width() - 16) / image_w_, double(height() - 16) / image_h_);
  // Integer scales keep every source pixel the same size on screen.
  return fit >= 1 ? std::floor(fit) : std::max(fit, 0.05);
}

QRectF ImageView::imageRect() const {
  const double s = effectiveScale();
  const double w = image_w_ * s, h = image_h_ * s;
  return QRectF(std::round((width() - w) / 2), std::round((height() - h) / 2), w, h);
}

QRectF ImageView::cellRect(int cell) const {
  const QRectF r = imageRect();
  const double cw = r.width() / grid_w_, ch = r.height() / grid_h_;
  return QRectF(r.left() + (cell % grid_w_) * cw, r.top() + (cell / grid_w_) * ch, cw, ch);
}

int ImageView::cellAt(const QPointF& pos) const {
  if (grid_w_ <= 0 || grid_h_ <= 0) return -1;
  const QRectF r = imageRect();
  if (!r.contains(pos)) return -1;
  const int c = std::min(grid_w_ - 1, int((pos.x() - r.left()) / r.width() * grid_w_));
  const int row = std::min(grid_h_ - 1, int((pos.y() - r.top()) / r.height() * grid_h_));
  return row * grid_w_ + c;
}

namespace {

// The image's rectangle on screen cut into the token grid: where each cell is painted.
struct CellGrid {
  QRectF r;
  int h = 0, w = 0;
  double cw = 0, ch = 0;  // one cell's size on screen

  CellGrid(const QRectF& rect, int gridH, int gridW)
      : r(rect), h(gridH), w(gridW), cw(rect.width() / gridW), ch(rect.height() / gridH) {}
  int cells() const { return h * w; }
  QRectF cell(int i) const {
    return QRectF(r.left() + (i % w) * cw, r.top() + (i / w) * ch, cw, ch);
  }
};

// Not generated yet: checks a quarter of a cell wide, so the pattern reads as "empty cells" at any
// zoom.
void paintCheckerboard(QPainter& p, const CellGrid& g) {
  const int check = std::max(2, int(std::round(std::min(g.cw, g.ch) / 2)));
  p.setBrushOrigin(g.r.topLeft());
  p.fillRect(g.r, checkerBrush(check));
}

// The raster range [from, to) in one colour, a rectangle per row.
void fillRange(QPainter& p, const CellGrid& g, int from, int to, const QColor& c) {
  for (int cell = from; cell < to;) {
    const int row = cell / g.w, col = cell % g.w;
    const int n = std::min(to - cell, g.w - col);
    p.fillRect(QRectF(g.r.left() + col * g.cw, g.r.top() + row * g.ch, n * g.cw, g.ch), c);
    cell += n;
  }
}

// The pending cell's colour: a code's from the palette, or a vector's from the colour map (when the
// map's dimension is the run's); grey when there is none.
QColor pendingColour(int cell, const QVector<qint64>& tokens, const QVector<QRgb>& palette,
                     const QVector<float>& vectors, const std::vector<float>& map) {
  const int dim = int(map.size()) / 3 - 1;
  if (dim > 0 && vectors.size() >= (cell + 1) * dim && vectors.size() % dim == 0 &&
      !std::isnan(vectors[cell * dim])) {
    const auto rgb = model::token_colour(map, vectors.constData() + cell * dim, dim);
    return QColor(rgb[0], rgb[1], rgb[2]);
  }
  const qint64 t = cell < tokens.size() ? tokens[cell] : -1;
  return t >= 0 && t < palette.size() && vectors.isEmpty() ? QColor(palette[int(t)])
                                                           : pendingCellColor();
}

// Committed but not yet decoded, the raster range [valid, end): each new token in its colour at
// once, a light hatch marking it as provisional until the decoder's picture arrives; grey without
// token colours.
void paintPendingCells(QPainter& p, const CellGrid& g, int valid, int end,
                       const QVector<qint64>& tokens, const QVector<QRgb>& palette,
                       const QVector<float>& vectors, const std::vector<float>& map) {
  if ((palette.isEmpty() && map.empty()) || tokens.size() < end) {
    fillRange(p, g, valid, end, pendingCellColor());
    return;
  }
  QBrush hatch(QColor(255, 255, 255, 70), Qt::BDiagPattern);
  for (int cell = valid; cell < end; ++cell) {
    const QRectF c = g.cell(cell);
    p.fillRect(c, pendingColour(cell, tokens, palette, vectors, map));
    p.fillRect(c, hatch);
  }
}

// The picture, at its size on screen (cached in `scaled`), clipped to `clip`.
void paintClipped(QPainter& p, const CellGrid& g, const QRegion& clip, const QImage& image,
                  QPixmap& scaled) {
  const QRect target = g.r.toAlignedRect();
  if (scaled.size() != target.size()) {
    // Nearest neighbour (FastTransformation): every token stays a crisp block of pixels.
    scaled = QPixmap::fromImage(
        image.scaled(target.size(), Qt::IgnoreAspectRatio, Qt::FastTransformation));
  }
  p.save();
  p.setClipRegion(clip);
  p.drawPixmap(target.topLeft(), scaled);
  p.restore();
}

// Decoded pixels, clipped to the valid raster prefix: full rows, then the partial row.
void paintDecoded(QPainter& p, const CellGrid& g, int valid, const QImage& image, QPixmap& scaled) {
  QRegion clip;
  const int full_rows = valid / g.w, rest = valid % g.w;
  auto rr = [](const QRectF& f) { return f.toAlignedRect(); };
  if (full_rows > 0) clip += rr(QRectF(g.r.left(), g.r.top(), g.r.width(), full_rows * g.ch));
  if (rest > 0) clip += rr(QRectF(g.r.left(), g.r.top() + full_rows * g.ch, rest * g.cw, g.ch));
  paintClipped(p, g, clip, image, scaled);
}

// The same for a grid filled in any order (MAR): every cell with a token that the picture does not
// show yet is pending; the picture is clipped to the cells it decoded.
void paintScatteredCells(QPainter& p, const CellGrid& g, const QVector<bool>& decoded,
                         const QVector<qint64>& tokens, const QVector<QRgb>& palette,
                         const QVector<float>& vectors, const std::vector<float>& map,
                         const QImage& image, QPixmap& scaled) {
  QBrush hatch(QColor(255, 255, 255, 70), Qt::BDiagPattern);
  QRegion clip;
  for (int cell = 0; cell < g.cells() && cell < tokens.size(); ++cell) {
    const bool shown = cell < decoded.size() && decoded[cell] && !image.isNull();
    if (shown) clip += g.cell(cell).toAlignedRect();
    if (shown || tokens[cell] < 0) continue;
    p.fillRect(g.cell(cell), pendingColour(cell, tokens, palette, vectors, map));
    p.fillRect(g.cell(cell), hatch);
  }
  if (!clip.isEmpty()) paintClipped(p, g, clip, image, scaled);
}

// Faint cell grid when cells are large enough for it not to become noise.
void paintCellLines(QPainter& p, const CellGrid& g) {
  if (g.cw < 14) return;
  const QRectF& r = g.r;
  p.setPen(QPen(QColor(255, 255, 255, 28), 1));
  for (int c = 1; c < g.w; ++c)
    p.drawLine(QPointF(r.left() + c * g.cw, r.top()), QPointF(r.left() + c * g.cw, r.bottom()));
  for (int row = 1; row < g.h; ++row)
    p.drawLine(QPointF(r.left(), r.top() + row * g.ch), QPointF(r.right(), r.top() + row * g.ch));
}

// The next cell to be generated: where the decoder is working now.
void paintNextCell(QPainter& p, const CellGrid& g, int cell) {
  p.setPen(QPen(QColor(0xfd, 0xe7, 0x25), std::max(1.0, g.cw / 8)));
  p.setBrush(Qt::NoBrush);
  p.drawRect(g.cell(cell).adjusted(1, 1, -1, -1));
}

// Dark outline around a bright one: visible on any picture.
void paintHighlight(QPainter& p, const CellGrid& g, int cell) {
  const QRectF c = g.cell(cell);
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(Qt::black, 5));
  p.drawRect(c.adjusted(-2, -2, 2, 2));
  p.setPen(QPen(highlightColor(), 3));
  p.drawRect(c.adjusted(-2, -2, 2, 2));
}

// A hint in a dark rounded box centred in `area`, in a slightly larger `font`.
void paintHint(QPainter& p, const QRect& area, const QFont& font, const QString& text) {
  QFont f = font;
  f.setPointSizeF(f.pointSizeF() * 1.05);
  p.setFont(f);
  const QRectF box =
      QFontMetricsF(f)
          .boundingRect(area.adjusted(20, 0, -20, 0), Qt::AlignCenter | Qt::TextWordWrap, text)
          .adjusted(-14, -10, 14, 10);
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(20, 22, 26, 200));
  p.drawRoundedRect(box, 6, 6);
  p.setPen(QColor(235, 235, 235));
  p.drawText(box, Qt::AlignCenter | Qt::TextWordWrap, text);
  p.setFont(font);
}

}  // namespace

void ImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Window).darker(115));
  if (grid_w_ <= 0 || image_w_ <= 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
    return;
  }
  const CellGrid g(imageRect(), grid_h_, grid_w_);
  const int valid = image_.isNull() ? 0 : std::min(valid_, g.cells());
  paintCheckerboard(p, g);
  if (any_order_) {
    paintScatteredCells(p, g, decoded_, tokens_, palette_, vectors_, vector_map_, image_, scaled_);
  } else {
    paintPendingCells(p, g, valid, std::min(committed_, g.cells()), tokens_, palette_, vectors_,
                      vector_map_);
    if (valid > 0) paintDecoded(p, g, valid, image_, scaled_);
  }
  paintCellLines(p, g);
  // The next cell is known only in raster order.
  if (running_ && !any_order_ && committed_ < g.cells()) paintNextCell(p, g, committed_);
  if (highlight_ >= 0 && highlight_ < g.cells()) paintHighlight(p, g, highlight_);
  // Before the first token: the empty canvas with the hint over it.
  if (!running_ && committed_ == 0 && valid == 0 && !placeholder_.isEmpty())
    paintHint(p, rect(), font(), placeholder_);
  // Zoom readout in the corner.
  p.setPen(palette().color(QPalette::PlaceholderText));
  const double s = effectiveScale();
  p.drawText(rect().adjusted(6, 4, -6, -4), Qt::AlignBottom | Qt::AlignRight,
             QStringLiteral("%1 x %2 px  ·  %3%4")
                 .arg(image_w_)
                 .arg(image_h_)
                 .arg(s >= 1 ? QString::number(int(s)) + "x" : QString::number(s, 'f', 2) + "x")
                 .arg(zoom_ == 0 ? tr(" (fit)") : QString()));
}

void ImageView::mouseMoveEvent(QMouseEvent* e) {
  const int cell = cellAt(e->position());
  if (cell != hovered_) {
    hovered_ = cell;
    Q_EMIT cellHovered(cell);
  }
}

void ImageView::leaveEvent(QEvent*) {
  if (hovered_ != -1) {
    hovered_ = -1;
    Q_EMIT cellHovered(-1);
  }
}

void ImageView::wheelEvent(QWheelEvent* e) {
  const int cur = zoom_ == 0 ? std::max(1, int(effectiveScale())) : zoom_;
  const int steps = e->angleDelta().y() / 120;
  if (steps == 0) return;
  setZoom(steps > 0 ? cur + steps : std::max(1, cur + steps));
  e->accept();
}

void ImageView::mouseDoubleClickEvent(QMouseEvent*) {
  setZoom(0);
}

void ImageView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  const int cell = cellAt(e->position());
  if (cell >= 0) Q_EMIT cellClicked(cell);
}

}  // namespace adtree::ui
