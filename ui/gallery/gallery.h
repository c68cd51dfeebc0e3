// Gallery: the studio's side of the persistent gallery (GUI.md "Gallery"): where it lives, whether
// it is on, its size cap, and saving off the GUI thread. The file format and the crash safety are
// GalleryStore's (gallery_store.h); this class runs its blocking work on one worker thread, in
// order (a save, then the cap; a listing), and reports back with signals on the GUI thread.
#pragma once
#include <QObject>
#include <QThreadPool>

#include "ui/gallery/gallery_store.h"

namespace adtree::ui {

class Gallery : public QObject {
  Q_OBJECT

 public:
  static constexpr qint64 kDefaultMaxBytes = 512ll << 20;

  explicit Gallery(QObject* parent = nullptr);
  ~Gallery() override;  // waits for the save in flight: a finished picture is never dropped

  void setDir(const QString& dir);
  QString dir() const { return dir_; }
  void setEnabled(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }
  void setMaxBytes(qint64 bytes) { max_bytes_ = bytes; }
  qint64 maxBytes() const { return max_bytes_; }

  // Lists the folder on the worker: -> loaded.
  void loadAsync();
  // Saves a finished run (when enabled): -> saved or saveFailed. `id` is the history's.
  void save(int id, const RunRecord& r);
  // Blocking, on the GUI thread: reading one entry back, deleting one.
  std::optional<RunRecord> read(const QString& base, QString* error) const;
  bool remove(const QString& base, QString* error) const;
  // Shows the entry's picture in the desktop's file manager (selected where the file manager
  // supports org.freedesktop.FileManager1, else its folder is opened).
  static void reveal(const QString& base);
  // Waits until the worker has nothing left to do (tests, and before the window closes).
  void waitForIdle();

 Q_SIGNALS:
  void loaded(const QVector<adtree::ui::GalleryStore::Entry>& entries);
  // `removed`: entries the size cap took out (oldest first) to make room.
  void saved(int id, const QString& base, const QStringList& removed);
  void saveFailed(int id, const QString& message);

 private:
  QThreadPool pool_;  // one thread: saves, caps and listings never overlap
  QString dir_;
  bool enabled_ = true;
  qint64 max_bytes_ = kDefaultMaxBytes;
};

}  // namespace adtree::ui
