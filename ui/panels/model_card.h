// The Model > Model Card dialog: what a loaded model is (name, sizes, draft head, vocabulary,
// licence, device, hash), from the engine's ModelInfo.
#pragma once
#include <QString>

#include "engine/events.h"

class QWidget;

namespace adtree::ui {

QString modelCardHtml(const engine::ModelInfo& m);
// Opens the card window-modal without blocking the event loop; it deletes itself when closed.
void showModelCard(QWidget* parent, const engine::ModelInfo& m);

}  // namespace adtree::ui
