// GalleryStore: the persistent gallery on disk (GUI.md "Gallery"). Every finished picture is two
// files in one folder (default $XDG_DATA_HOME/adtree-studio/gallery): <base>.png, the picture with
// its settings in the adtree-settings chunk (png_settings.h), and <base>.adtrun.json, the run file
// (run_record.h). <base> is the time it was made and its seed, so names sort oldest first.
//
// Nothing half-written ever carries a gallery name: each file is written under .partial/ and
// renamed into place (one rename, atomic on one file system), the run file first and the picture
// last, so a picture in the folder means a complete entry. What a killed save leaves behind
// (.partial/ files, a run file without its picture) is removed by the next list().
//
// The class does blocking file work only; ui/gallery/gallery.h runs saves on a worker thread.
#pragma once
#include <QDateTime>
#include <QImage>
#include <QString>
#include <QStringList>
#include <QVector>

#include <nlohmann/json.hpp>

#include "ui/runs/run_record.h"

namespace adtree::ui {

class GalleryStore {
 public:
  struct Entry {
    QString base;             // absolute path without suffix
    QImage image;             // the picture (small: the model's image size)
    nlohmann::json settings;  // its adtree-settings (prompt, seed, method, result, ...)
    QDateTime made;
    qint64 bytes = 0;  // both files
  };

  explicit GalleryStore(QString dir);
  // $XDG_DATA_HOME/adtree-studio/gallery (~/.local/share/adtree-studio/gallery).
  static QString defaultDir();
  const QString& dir() const { return dir_; }

  // Complete entries, oldest first. Clears what an interrupted save left behind.
  QVector<Entry> list() const;
  // Writes the entry of `r` (blocking; any thread). On success *base names it.
  bool write(const RunRecord& r, QString* base, QString* error) const;
  // The run file of an entry, read back (the history loads an entry when it is shown).
  std::optional<RunRecord> read(const QString& base, QString* error) const;
  // Deletes both files of an entry.
  bool remove(const QString& base, QString* error) const;
  // Removes the oldest entries until the gallery holds at most maxBytes (the newest entry always
  // stays); returns the bases removed.
  QStringList enforceCap(qint64 maxBytes) const;

  static QString pngPath(const QString& base) { return base + ".png"; }
  static QString runPath(const QString& base) { return base + ".adtrun.json"; }

 private:
  QString partialDir() const;
  bool writeFile(const QString& finalPath, const QByteArray& data, QString* error) const;

  QString dir_;
};

}  // namespace adtree::ui
