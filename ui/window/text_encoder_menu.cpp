#include "ui/window/text_encoder_menu.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QMenu>
#include <QSettings>

namespace adtree::ui {

TextEncoderMenu::TextEncoderMenu(QMenu* model, QWidget* dialogParent, QObject* parent)
    : QObject(parent), dialog_parent_(dialogParent) {
  auto* menu = model->addMenu(tr("&Text Encoder"));
  menu->setToolTipsVisible(true);
  current_ = menu->addAction(QString());
  current_->setEnabled(false);
  menu->addSeparator();
  auto* choose = menu->addAction(tr("&Choose a T5 Directory…"), this, [this] {
    const QString d = QFileDialog::getExistingDirectory(
        dialog_parent_,
        tr("T5 text encoder (a flan-t5-xl directory: config.json, spiece.model, "
           "model.safetensors)"),
        dir_);
    if (!d.isEmpty()) setDir(d);
  });
  choose->setToolTip(
      tr("LlamaGen's text-to-image models read captions encoded by FLAN-T5-XL: with its "
         "directory here, you type the prompt instead of picking a caption-embedding file."));
  none_ = menu->addAction(tr("&None (caption-embedding files only)"), this,
                          [this] { setDir(QString()); });
  showDir();
}

void TextEncoderMenu::setDir(const QString& dir) {
  if (dir == dir_) return;
  dir_ = dir;
  showDir();
  Q_EMIT changed();
}

void TextEncoderMenu::showDir() {
  current_->setText(dir_.isEmpty() ? tr("None chosen (a model's own, if model.json names one)")
                                   : tr("Using %1").arg(QDir::toNativeSeparators(dir_)));
  none_->setEnabled(!dir_.isEmpty());
}

void TextEncoderMenu::loadSettings(const QSettings& s) {
  dir_ = s.value("model/textEncoder").toString();
  showDir();
}

void TextEncoderMenu::saveSettings(QSettings& s) const {
  s.setValue("model/textEncoder", dir_);
}

}  // namespace adtree::ui
