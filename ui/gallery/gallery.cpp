#include "ui/gallery/gallery.h"

#include <QDBusConnection>
#include <QDBusMessage>
#include <QDesktopServices>
#include <QFileInfo>
#include <QUrl>

namespace adtree::ui {

Gallery::Gallery(QObject* parent) : QObject(parent), dir_(GalleryStore::defaultDir()) {
  pool_.setMaxThreadCount(1);
  qRegisterMetaType<QVector<adtree::ui::GalleryStore::Entry>>();
}

Gallery::~Gallery() {
  pool_.waitForDone();
}

void Gallery::setDir(const QString& dir) {
  pool_.waitForDone();  // a save in flight finishes where it started
  dir_ = dir;
}

void Gallery::loadAsync() {
  const GalleryStore store(dir_);
  pool_.start([this, store] {
    auto entries = store.list();
    QMetaObject::invokeMethod(
        this, [this, entries = std::move(entries)] { Q_EMIT loaded(entries); },
        Qt::QueuedConnection);
  });
}

void Gallery::save(int id, const RunRecord& r) {
  if (!enabled_) return;
  const GalleryStore store(dir_);
  const qint64 cap = max_bytes_;
  pool_.start([this, store, id, r, cap] {
    QString base, error;
    const bool ok = store.write(r, &base, &error);
    const QStringList removed = ok && cap > 0 ? store.enforceCap(cap) : QStringList();
    QMetaObject::invokeMethod(
        this,
        [this, ok, id, base, error, removed] {
          if (ok) {
            Q_EMIT saved(id, base, removed);
          } else {
            Q_EMIT saveFailed(id, error);
          }
        },
        Qt::QueuedConnection);
  });
}

std::optional<RunRecord> Gallery::read(const QString& base, QString* error) const {
  return GalleryStore(dir_).read(base, error);
}

bool Gallery::remove(const QString& base, QString* error) const {
  return GalleryStore(dir_).remove(base, error);
}

void Gallery::reveal(const QString& base) {
  const QUrl file = QUrl::fromLocalFile(GalleryStore::pngPath(base));
  // The freedesktop file-manager interface (Dolphin, Nautilus, Nemo, ...): opens the folder
  // with the picture selected.
  auto msg = QDBusMessage::createMethodCall("org.freedesktop.FileManager1",
                                            "/org/freedesktop/FileManager1",
                                            "org.freedesktop.FileManager1", "ShowItems");
  msg << QStringList{file.toString()} << QString();
  if (QDBusConnection::sessionBus().isConnected() &&
      QDBusConnection::sessionBus().call(msg, QDBus::Block, 2000).type() !=
          QDBusMessage::ErrorMessage) {
    return;
  }
  QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(file.toLocalFile()).absolutePath()));
}

void Gallery::waitForIdle() {
  pool_.waitForDone();
}

}  // namespace adtree::ui
