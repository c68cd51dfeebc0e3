#include "ui/window/gallery_menu.h"

#include <QAction>
#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QInputDialog>
#include <QMenu>
#include <QSignalBlocker>
#include <QUrl>

#include "ui/gallery/gallery.h"
#include "ui/gallery/run_library.h"

namespace adtree::ui {

GalleryMenu::GalleryMenu(QMenu* menu, RunLibrary* library, QWidget* dialogs)
    : QObject(menu), library_(library) {
  keep_ = menu->addAction(tr("&Keep Finished Pictures in the Gallery"));
  keep_->setObjectName("galleryAction");
  keep_->setCheckable(true);
  keep_->setToolTip(tr("Save every finished picture with its run file, across sessions"));
  connect(keep_, &QAction::toggled, library_, &RunLibrary::setGalleryEnabled);
  Gallery* gallery = library_->gallery();
  menu->addAction(tr("Open the Gallery &Folder"), this, [gallery] {
    QDir().mkpath(gallery->dir());
    QDesktopServices::openUrl(QUrl::fromLocalFile(gallery->dir()));
  });
  menu->addAction(tr("Choose the Gallery Folder…"), this, [this, gallery, dialogs] {
    const QString dir =
        QFileDialog::getExistingDirectory(dialogs, tr("Gallery folder"), gallery->dir());
    if (!dir.isEmpty()) library_->setGalleryDir(dir, /*remember=*/true);
  });
  menu->addAction(tr("Gallery Size &Limit…"), this, [this, gallery, dialogs] {
    bool ok = false;
    const int mb = QInputDialog::getInt(
        dialogs, tr("Gallery size limit"),
        tr("Largest size of the gallery folder in MB; the oldest pictures are removed first "
           "when a new one would pass it:"),
        int(gallery->maxBytes() >> 20), 1, 1 << 20, 64, &ok);
    if (ok) library_->setGalleryLimitMb(mb);
  });
}

void GalleryMenu::showEnabled() {
  const QSignalBlocker quiet(keep_);  // its handler saves settings: not while loading them
  keep_->setChecked(library_->gallery()->enabled());
}

}  // namespace adtree::ui
