// PresetsMenu: Edit > Save Settings as Preset and Edit > Presets (ui/runs/presets.h): saves the
// prompt bar's method and acceptance rule with the settings panel's state under a name, lists the
// saved ones afresh each time the menu opens (with a Delete submenu) and applies the one chosen.
// Tests and scripts find it by its objectName, "presetsMenu".
#pragma once
#include <QObject>
#include <QString>

#include <functional>

class QMenu;

namespace adtree::ui {

class PromptBar;
class SettingsPanel;

class PresetsMenu : public QObject {
  Q_OBJECT

 public:
  using Status = std::function<void(const QString& message, int timeoutMs)>;
  // Adds its entries to `edit`; `bar` and `settings` are what a preset saves and restores.
  PresetsMenu(QMenu* edit, PromptBar* bar, SettingsPanel* settings, Status status, QObject* parent);

  void save(const QString& name);
  bool apply(const QString& name);  // false (and a status message) if it cannot be read

 private:
  void askName();
  void fill();

  QMenu* menu_ = nullptr;
  PromptBar* bar_ = nullptr;
  SettingsPanel* settings_ = nullptr;
  Status status_;
};

}  // namespace adtree::ui
