// ImageView: the image as it grows token by token. Cells not generated yet show the checkerboard;
// cells committed but not yet decoded show their token's approximate colour (a code's from the
// palette, a vector's from the continuous model's colour map), hatched (grey when the model has no
// token colours); decoded cells show their pixels. Zoom is integer nearest-
// neighbour so every token's 4x4 (or 16x16) pixels stay crisp. Painting is driven by the
// window's frame timer (refresh()), never by the arrival rate of tokens.
#pragma once
#include <QImage>
#include <QPixmap>
#include <QVector>
#include <QWidget>

#include <cstdint>
#include <vector>

namespace adtree::ui {

class ImageView : public QWidget {
  Q_OBJECT

 public:
  explicit ImageView(QWidget* parent = nullptr);

  // A new run: grid of cells, image size in pixels; clears the picture.
  void startRun(int gridH, int gridW, int imageH, int imageW);
  void clear();
  // The newest decoded picture; cells >= validCells are masked, or, for a model that makes its
  // tokens in any order (MAR's random one), every cell not in `cells`: pending cells are then
  // those with a token (tokens >= 0) that the picture does not show yet.
  void setPreview(const QImage& image, int validCells, const std::vector<int64_t>& cells = {});
  // Cells the engine has committed (decoded or not) and the tokens of the grid (-1 = none); a
  // continuous model's tokens are `vectors`, the token colour map's dimension of numbers a cell.
  void setCommitted(int cells, const QVector<qint64>& tokens = {},
                    const QVector<float>& vectors = {});
  // Approximate RGB colour per code (ModelInfo::token_colors); empty = paint pending cells grey.
  void setTokenColors(const std::vector<uint8_t>& rgb);
  // A continuous model's linear map from a vector token to RGB (ModelInfo::vector_colours,
  // model/continuous/token_colours.h); empty = paint its pending cells grey.
  void setVectorColours(const std::vector<float>& map);
  void setRunning(bool running);
  void setHighlight(int cell);  // -1 = none
  void setPlaceholder(const QString& text);
  // 0 = fit to the widget (integer scale when it fits at least 1x), else pixels per image pixel.
  void setZoom(int zoom);
  int zoom() const { return zoom_; }
  double effectiveScale() const;

  const QImage& image() const { return image_; }
  int validCells() const { return valid_; }
  int committed() const { return committed_; }
  // Repaints if something changed since the last paint (called at most ~30 times a second).
  void refresh();

  QSize sizeHint() const override { return {420, 420}; }
  QSize minimumSizeHint() const override { return {160, 160}; }

 Q_SIGNALS:
  void cellHovered(int cell);  // -1 when the mouse leaves the grid
  void cellClicked(int cell);  // a left click on a cell (the token distribution view)
  void zoomChanged(int zoom);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void leaveEvent(QEvent*) override;
  void wheelEvent(QWheelEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void mousePressEvent(QMouseEvent* e) override;

 public:
  int cellAt(const QPointF& pos) const;  // -1 outside the grid
  QRectF cellRect(int cell) const;       // in widget coordinates

 private:
  QRectF imageRect() const;

  QImage image_;
  QPixmap scaled_;  // image_ at the size on screen: 30 repaints a second become plain copies
  QVector<QRgb> palette_;
  QVector<qint64> tokens_;
  QVector<float> vectors_;
  std::vector<float> vector_map_;
  int grid_h_ = 0, grid_w_ = 0, image_h_ = 0, image_w_ = 0;
  int valid_ = 0, committed_ = 0, highlight_ = -1, hovered_ = -1;
  bool any_order_ = false;  // the preview named its cells (decoded_), not a raster prefix
  QVector<bool> decoded_;
  int zoom_ = 0;
  bool running_ = false;
  bool dirty_ = true;
  QString placeholder_;
};

}  // namespace adtree::ui
