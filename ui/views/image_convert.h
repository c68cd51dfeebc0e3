// The one place an engine picture (RGB bytes) becomes a QImage.
#pragma once
#include <QImage>

#include "engine/events.h"

namespace adtree::ui {

// A deep copy (the event's buffer goes away with the event); a null image when `im` is empty.
QImage toQImage(const engine::RgbImage& im);
// A picture to the clipboard, 4x with nearest neighbour: a 64 x 64 picture pasted elsewhere stays
// crisp and visible.
void copyToClipboard(const QImage& picture);

}  // namespace adtree::ui
