// GalleryMenu: View > Gallery, the gallery's options (GUI.md "Gallery"): keep finished pictures,
// open or choose the folder, the size limit. Each forwards to the RunLibrary, which keeps them.
#pragma once
#include <QObject>

class QAction;
class QMenu;
class QWidget;

namespace adtree::ui {

class RunLibrary;

class GalleryMenu : public QObject {
  Q_OBJECT

 public:
  // `dialogs`: the parent of the folder and size dialogs.
  GalleryMenu(QMenu* menu, RunLibrary* library, QWidget* dialogs);

  // The check mark from the library's settings, without saving them again.
  void showEnabled();

 private:
  RunLibrary* library_ = nullptr;
  QAction* keep_ = nullptr;
};

}  // namespace adtree::ui
