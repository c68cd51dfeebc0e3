#include "ui/views/image_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <cmath>

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
  hovered_ = -1;
  dirty_ = true;
  update();
}

void ImageView::clear() {
  startRun(grid_h_, grid_w_, image_h_, image_w_);
}

void ImageView::setPreview(const QImage& image, int validCells) {
  image_ = image;
  scaled_ = QPixmap();
  valid_ = validCells;
  if (image_w_ == 0) {
    image_w_ = image.width();
    image_h_ = image.height();
  }
  dirty_ = true;
}

void ImageView::setCommitted(int cells, const QVector<qint64>& tokens) {
  if (cells == committed_) return;
  committed_ = cells;
  tokens_ = tokens;  // implicitly shared: a copy happens only when the run writes the next step
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

void ImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Window).darker(115));
  if (grid_w_ <= 0 || image_w_ <= 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
    return;
  }
  const QRectF r = imageRect();
  const double cw = r.width() / grid_w_, ch = r.height() / grid_h_;
  // Checks a quarter of a cell wide, so the pattern reads as "empty cells" at any zoom.
  const int check = std::max(2, int(std::round(std::min(cw, ch) / 2)));
  p.setBrushOrigin(r.topLeft());
  p.fillRect(r, checkerBrush(check));

  // Committed but not yet decoded: the raster range [valid_, committed_).
  auto fill_range = [&](int from, int to, const QColor& c) {
    for (int cell = from; cell < to;) {
      const int row = cell / grid_w_, col = cell % grid_w_;
      const int n = std::min(to - cell, grid_w_ - col);
      p.fillRect(QRectF(r.left() + col * cw, r.top() + row * ch, n * cw, ch), c);
      cell += n;
    }
  };
  const int valid = image_.isNull() ? 0 : std::min(valid_, grid_h_ * grid_w_);
  const int pending_end = std::min(committed_, grid_h_ * grid_w_);
  if (palette_.isEmpty() || tokens_.size() < pending_end) {
    fill_range(valid, pending_end, pendingCellColor());
  } else {
    // Each new token in its code's colour at once; a light hatch marks it as provisional until
    // the VQ decoder's picture arrives.
    QBrush hatch(QColor(255, 255, 255, 70), Qt::BDiagPattern);
    for (int cell = valid; cell < pending_end; ++cell) {
      const qint64 t = tokens_[cell];
      const QRectF c = cellRect(cell);
      p.fillRect(c, t >= 0 && t < palette_.size() ? QColor(palette_[int(t)]) : pendingCellColor());
      p.fillRect(c, hatch);
    }
  }

  if (valid > 0) {
    // Decoded pixels, clipped to the valid raster prefix: full rows, then the partial row.
    QRegion clip;
    const int full_rows = valid / grid_w_, rest = valid % grid_w_;
    auto rr = [](const QRectF& f) { return f.toAlignedRect(); };
    if (full_rows > 0) clip += rr(QRectF(r.left(), r.top(), r.width(), full_rows * ch));
    if (rest > 0) clip += rr(QRectF(r.left(), r.top() + full_rows * ch, rest * cw, ch));
    const QRect target = r.toAlignedRect();
    if (scaled_.size() != target.size()) {
      // Nearest neighbour (FastTransformation): every token stays a crisp block of pixels.
      scaled_ = QPixmap::fromImage(
          image_.scaled(target.size(), Qt::IgnoreAspectRatio, Qt::FastTransformation));
    }
    p.save();
    p.setClipRegion(clip);
    p.drawPixmap(target.topLeft(), scaled_);
    p.restore();
  }
  // Faint cell grid when cells are large enough for it not to become noise.
  if (cw >= 14) {
    p.setPen(QPen(QColor(255, 255, 255, 28), 1));
    for (int c = 1; c < grid_w_; ++c)
      p.drawLine(QPointF(r.left() + c * cw, r.top()), QPointF(r.left() + c * cw, r.bottom()));
    for (int row = 1; row < grid_h_; ++row)
      p.drawLine(QPointF(r.left(), r.top() + row * ch), QPointF(r.right(), r.top() + row * ch));
  }
  // The next cell to be generated: where the decoder is working now.
  if (running_ && committed_ < grid_h_ * grid_w_) {
    p.setPen(QPen(QColor(0xfd, 0xe7, 0x25), std::max(1.0, cw / 8)));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cellRect(committed_).adjusted(1, 1, -1, -1));
  }
  if (highlight_ >= 0 && highlight_ < grid_h_ * grid_w_) {
    const QRectF c = cellRect(highlight_);
    p.setBrush(Qt::NoBrush);
    // Dark outline around a bright one: visible on any picture.
    p.setPen(QPen(Qt::black, 5));
    p.drawRect(c.adjusted(-2, -2, 2, 2));
    p.setPen(QPen(highlightColor(), 3));
    p.drawRect(c.adjusted(-2, -2, 2, 2));
  }
  // Before the first token: the empty canvas with the hint over it.
  if (!running_ && committed_ == 0 && valid == 0 && !placeholder_.isEmpty()) {
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 1.05);
    p.setFont(f);
    const QRectF box = QFontMetricsF(f)
                           .boundingRect(rect().adjusted(20, 0, -20, 0),
                                         Qt::AlignCenter | Qt::TextWordWrap, placeholder_)
                           .adjusted(-14, -10, 14, 10);
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(20, 22, 26, 200));
    p.drawRoundedRect(box, 6, 6);
    p.setPen(QColor(235, 235, 235));
    p.drawText(box, Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
    p.setFont(font());
  }
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
