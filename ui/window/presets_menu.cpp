#include "ui/window/presets_menu.h"

#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>

#include "ui/panels/prompt_bar.h"
#include "ui/panels/settings_panel.h"
#include "ui/runs/presets.h"

namespace adtree::ui {

PresetsMenu::PresetsMenu(QMenu* edit, PromptBar* bar, SettingsPanel* settings, Status status,
                         QObject* parent)
    : QObject(parent), bar_(bar), settings_(settings), status_(std::move(status)) {
  setObjectName("presetsMenu");
  edit->addAction(tr("Save Settings as &Preset…"), this, &PresetsMenu::askName);
  menu_ = edit->addMenu(tr("P&resets"));
  connect(menu_, &QMenu::aboutToShow, this, &PresetsMenu::fill);
}

void PresetsMenu::save(const QString& name) {
  PresetStore().save(name, Preset{bar_->methodKey(), bar_->relaxKey(), settings_->saveState()});
  status_(tr("Saved the preset “%1”").arg(name), 3000);
}

bool PresetsMenu::apply(const QString& name) {
  const auto p = PresetStore().load(name);
  if (!p || !bar_->setMethodKey(p->method)) {
    status_(tr("The preset “%1” cannot be read").arg(name), 5000);
    return false;
  }
  bar_->setRelaxKey(p->relax);
  settings_->restoreState(p->settings);
  status_(tr("Applied the preset “%1”").arg(name), 3000);
  return true;
}

void PresetsMenu::askName() {
  bool ok = false;
  const QString name = QInputDialog::getText(bar_->window(), tr("Save preset"),
                                             tr("Name for the method and its settings:"),
                                             QLineEdit::Normal, bar_->methodLabel(), &ok)
                           .trimmed();
  if (ok && !name.isEmpty()) save(name);
}

void PresetsMenu::fill() {
  menu_->clear();
  const QStringList names = PresetStore().names();
  for (const auto& n : names) menu_->addAction(n, this, [this, n] { apply(n); });
  if (names.isEmpty()) menu_->addAction(tr("(none saved yet)"))->setEnabled(false);
  auto* del = menu_->addMenu(tr("&Delete"));
  del->setEnabled(!names.isEmpty());
  for (const auto& n : names) del->addAction(n, this, [n] { PresetStore().remove(n); });
}

}  // namespace adtree::ui
