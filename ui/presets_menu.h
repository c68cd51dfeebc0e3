// PresetsMenu: Edit > Presets, the saved presets (ui/presets.h) listed afresh each time the menu
// opens, and a Delete submenu; choosing one asks the window to apply it.
#pragma once
#include <QObject>
#include <QString>

class QMenu;

namespace adtree::ui {

class PresetsMenu : public QObject {
  Q_OBJECT

 public:
  explicit PresetsMenu(QMenu* menu, QObject* parent = nullptr);

 Q_SIGNALS:
  void applyRequested(const QString& name);

 private:
  void fill();

  QMenu* menu_ = nullptr;
};

}  // namespace adtree::ui
