#include "ui/image_convert.h"

namespace adtree::ui {

QImage toQImage(const engine::RgbImage& im) {
  if (im.empty()) return {};
  return QImage(im.pixels.data(), im.width, im.height, im.width * 3, QImage::Format_RGB888).copy();
}

}  // namespace adtree::ui
