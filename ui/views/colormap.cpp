#include "ui/views/colormap.h"

#include <QPainter>
#include <QPixmap>
#include "ui/views/qcp.h"

namespace adtree::ui {

QCPColorGradient viridisGradient() {
  QCPColorGradient g;
  g.clearColorStops();
  static const char* stops[] = {"#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c",
                                "#28ae80", "#5ec962", "#addc30", "#fde725"};
  const int n = int(sizeof(stops) / sizeof(stops[0]));
  for (int i = 0; i < n; ++i) g.setColorStopAt(double(i) / (n - 1), QColor(stops[i]));
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setNanHandling(QCPColorGradient::nhTransparent);
  return g;
}

QBrush checkerBrush(int check) {
  QPixmap tile(2 * check, 2 * check);
  tile.fill(QColor(0x3a, 0x3d, 0x42));
  QPainter p(&tile);
  const QColor light(0x4a, 0x4e, 0x55);
  p.fillRect(0, 0, check, check, light);
  p.fillRect(check, check, check, check, light);
  return QBrush(tile);
}

QColor pendingCellColor() {
  return QColor(0x6b, 0x72, 0x80);
}

QColor highlightColor() {
  return QColor(0xff, 0x4d, 0x6d);
}

}  // namespace adtree::ui
