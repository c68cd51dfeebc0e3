// TextEncoderMenu: the Model menu's Text Encoder choice (GUI.md "Main window"): the T5 directory
// that turns typed prompts into captions for a LlamaGen t2i model, kept across sessions and passed
// with every load (models of other kinds ignore it). A model whose model.json names its own
// encoder uses that one unless the user chose another here.
#pragma once
#include <QObject>
#include <QString>

class QAction;
class QMenu;
class QSettings;
class QWidget;

namespace adtree::ui {

class TextEncoderMenu : public QObject {
  Q_OBJECT

 public:
  // Adds the Text Encoder submenu to `model`; `dialogParent` owns the folder dialog.
  TextEncoderMenu(QMenu* model, QWidget* dialogParent, QObject* parent);

  QString dir() const { return dir_; }    // "" = none chosen
  void setDir(const QString& dir);        // as the user would, without the dialog
  void loadSettings(const QSettings& s);  // model/textEncoder
  void saveSettings(QSettings& s) const;

 Q_SIGNALS:
  void changed();  // the user chose another encoder, or none

 private:
  void showDir();

  QWidget* dialog_parent_;
  QAction* current_ = nullptr;
  QAction* none_ = nullptr;
  QString dir_;
};

}  // namespace adtree::ui
