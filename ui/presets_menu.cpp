#include "ui/presets_menu.h"

#include <QMenu>

#include "ui/presets.h"

namespace adtree::ui {

PresetsMenu::PresetsMenu(QMenu* menu, QObject* parent) : QObject(parent), menu_(menu) {
  connect(menu_, &QMenu::aboutToShow, this, &PresetsMenu::fill);
}

void PresetsMenu::fill() {
  menu_->clear();
  const QStringList names = PresetStore().names();
  for (const auto& n : names) menu_->addAction(n, this, [this, n] { Q_EMIT applyRequested(n); });
  if (names.isEmpty()) menu_->addAction(tr("(none saved yet)"))->setEnabled(false);
  auto* del = menu_->addMenu(tr("&Delete"));
  del->setEnabled(!names.isEmpty());
  for (const auto& n : names) del->addAction(n, this, [n] { PresetStore().remove(n); });
}

}  // namespace adtree::ui
