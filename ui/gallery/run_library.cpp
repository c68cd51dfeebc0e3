#include "ui/gallery/run_library.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QTimer>

#include "ui/gallery/gallery.h"
#include "ui/gallery/run_history.h"

namespace adtree::ui {

RunLibrary::RunLibrary(QObject* parent)
    : QObject(parent), history_(new RunHistory(this)), gallery_(new Gallery(this)) {
  connect(gallery_, &Gallery::loaded, this, [this](const QVector<GalleryStore::Entry>& entries) {
    listing_ += entries;
    listSome();
  });
  connect(gallery_, &Gallery::saved, this,
          [this](int id, const QString& base, const QStringList& out) {
            history_->setGalleryBase(id, base);
            for (const auto& b : out) {
              if (const int old = history_->idOfGalleryBase(b)) removeListed(old);
            }
            if (!out.isEmpty()) Q_EMIT capped(int(out.size()), int(gallery_->maxBytes() >> 20));
            Q_EMIT saved(id);
          });
  connect(gallery_, &Gallery::saveFailed, this, [this](int id, const QString& message) {
    Q_EMIT saveFailed(id, gallery_->dir(), message);
  });
}

// A few listed pictures per event-loop turn: a gallery of hundreds makes its thumbnails without
// holding the GUI thread (each is a scaled pixmap and a row insertion).
void RunLibrary::listSome() {
  constexpr int kPerTurn = 24;
  const QString dir = QDir(gallery_->dir()).absolutePath();
  for (int n = 0; n < kPerTurn && !listing_.isEmpty(); ++n) {
    const auto e = listing_.takeFirst();
    // A listing of a folder the user has since switched away from is dropped.
    if (QFileInfo(e.base).absolutePath() != dir) continue;
    if (!history_->idOfGalleryBase(e.base)) history_->addStored(e);
  }
  if (!listing_.isEmpty()) QTimer::singleShot(0, this, &RunLibrary::listSome);
}

int RunLibrary::addFinished(const RunRecord& r) {
  const int id = history_->add(r);
  RunRecord saved = r;
  saved.id = id;
  gallery_->save(id, saved);  // on the gallery's thread: the statistics are shared, read-only
  return id;
}

int RunLibrary::addOpened(const RunRecord& r) {
  return history_->add(r);
}

const RunRecord* RunLibrary::load(int id, QString* error) {
  return history_->load(id, [&](const QString& base) { return gallery_->read(base, error); });
}

std::optional<RunLibrary::Pair> RunLibrary::loadPair(int a, int b, QString* error) {
  load(b, error);
  const RunRecord* ra = load(a, error);
  const RunRecord* rb = history_->find(b);  // loading `a` may have moved `b`
  if (!ra || !rb || !ra->stats || !rb->stats) return std::nullopt;
  if (ra->id > rb->id) std::swap(ra, rb);
  return Pair{ra, rb};
}

void RunLibrary::removeListed(int id) {
  history_->remove(id);
  Q_EMIT removed(id);
}

int RunLibrary::remove(const QList<int>& ids, QString* error) {
  int files = 0;
  for (const int id : ids) {
    const QString base = history_->galleryBase(id);
    if (!base.isEmpty() && !gallery_->remove(base, error)) break;
    files += base.isEmpty() ? 0 : 1;
    removeListed(id);
  }
  return files;
}

void RunLibrary::setGalleryDir(const QString& dir, bool remember) {
  gallery_->setDir(dir);
  if (remember) QSettings().setValue("gallery/dir", dir);
  // The other folder's pictures leave the list (this session's unsaved runs stay).
  for (int row = history_->rowCount() - 1; row >= 0; --row) {
    const int id = history_->idAt(row);
    if (!history_->galleryBase(id).isEmpty()) removeListed(id);
  }
  if (gallery_->enabled()) gallery_->loadAsync();
  Q_EMIT noteChanged(note());
}

void RunLibrary::setGalleryEnabled(bool on) {
  gallery_->setEnabled(on);
  if (on) gallery_->loadAsync();  // the pictures of earlier sessions come back
  saveSettings();
  Q_EMIT noteChanged(note());
}

void RunLibrary::setGalleryLimitMb(int mb) {
  gallery_->setMaxBytes(qint64(mb) << 20);
  saveSettings();
  Q_EMIT noteChanged(note());
}

void RunLibrary::loadSettings() {
  QSettings s;
  gallery_->setDir(s.value("gallery/dir", GalleryStore::defaultDir()).toString());
  gallery_->setEnabled(s.value("gallery/enabled", true).toBool());
  gallery_->setMaxBytes(qint64(s.value("gallery/limitMB", 512).toInt()) << 20);
  if (gallery_->enabled()) gallery_->loadAsync();
  Q_EMIT noteChanged(note());
}

void RunLibrary::saveSettings() const {
  QSettings s;
  s.setValue("gallery/enabled", gallery_->enabled());
  s.setValue("gallery/limitMB", int(gallery_->maxBytes() >> 20));
}

QString RunLibrary::note() const {
  return gallery_->enabled()
             ? tr("Gallery: %1 (limit %2 MB; View ▸ Gallery)")
                   .arg(QDir::toNativeSeparators(gallery_->dir()))
                   .arg(gallery_->maxBytes() >> 20)
             : tr("The gallery is off: runs are kept for this session only (View ▸ Gallery).");
}

bool RunLibrary::reveal(int id) const {
  const QString base = history_->galleryBase(id);
  if (base.isEmpty()) return false;
  Gallery::reveal(base);
  return true;
}

}  // namespace adtree::ui
