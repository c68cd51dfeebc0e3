// Named presets of the studio's generation settings (Edit > Presets): the method, the acceptance
// rule and the settings panel's state, kept in the user's settings file (QSettings, XDG config)
// so they survive restarts.
#pragma once
#include <QString>
#include <QStringList>
#include <optional>

namespace adtree::ui {

struct Preset {
  QString method;              // method key ("adt", ...)
  QString relax = "lossless";  // acceptance rule: lossless, lantern or cascade
  QString settings;            // SettingsPanel::saveState()
};

class PresetStore {
 public:
  QStringList names() const;  // sorted
  void save(const QString& name, const Preset& preset);
  std::optional<Preset> load(const QString& name) const;  // nullopt: unknown or unreadable
  void remove(const QString& name);
};

}  // namespace adtree::ui
