#include "ui/views/image_convert.h"

#include <QClipboard>
#include <QGuiApplication>

namespace adtree::ui {

QImage toQImage(const engine::RgbImage& im) {
  if (im.empty()) return {};
  return QImage(im.pixels.data(), im.width, im.height, im.width * 3, QImage::Format_RGB888).copy();
}

void copyToClipboard(const QImage& picture) {
  QGuiApplication::clipboard()->setImage(
      picture.scaled(picture.size() * 4, Qt::IgnoreAspectRatio, Qt::FastTransformation));
}

}  // namespace adtree::ui
