// RunLibrary: the studio's runs and where they are kept (GUI.md "Gallery"): the RunHistory model
// the History panel shows, the Gallery that keeps pictures across sessions, and the operations
// that touch both: a finished run is listed and saved; a deletion removes the entry and its
// files; another gallery folder swaps the listed pictures; the size cap takes out the oldest.
#pragma once
#include <QObject>

#include <optional>

#include "ui/gallery/gallery_store.h"
#include "ui/runs/run_record.h"

namespace adtree::ui {

class Gallery;
class RunHistory;

class RunLibrary : public QObject {
  Q_OBJECT

 public:
  explicit RunLibrary(QObject* parent = nullptr);

  RunHistory* history() const { return history_; }
  Gallery* gallery() const { return gallery_; }

  // A finished run: listed on top and, when the gallery is on, saved (off the GUI thread).
  int addFinished(const RunRecord& r);
  // A run file the user opened: listed only (it already has a file).
  int addOpened(const RunRecord& r);
  // The whole record, read back from the gallery when it was listed from its picture; null (and
  // *error) when it cannot be read.
  const RunRecord* load(int id, QString* error);
  // Two entries for the compare window, read back as load() does, the older first ("B over A" then
  // reads as "the newer configuration over the older"); nullopt when either cannot be read or has
  // no statistics.
  struct Pair {
    const RunRecord* older;
    const RunRecord* newer;
  };
  std::optional<Pair> loadPair(int a, int b, QString* error);
  // Removes the entries and their gallery files. Returns how many files went; stops at the first
  // entry whose files cannot be deleted (its message in *error).
  int remove(const QList<int>& ids, QString* error);
  // Where the gallery lives; the listed pictures follow. `remember`: kept in the settings.
  void setGalleryDir(const QString& dir, bool remember);
  void setGalleryEnabled(bool on);
  void setGalleryLimitMb(int mb);
  void loadSettings();  // gallery/dir, gallery/enabled, gallery/limitMB
  void saveSettings() const;
  QString note() const;  // one line: where the gallery is and its limit, or that it is off
  // The desktop's file manager at the entry's picture; false when it is not in the gallery.
  bool reveal(int id) const;

 Q_SIGNALS:
  void removed(int id);  // an entry left the history (deleted, capped, another folder)
  void saved(int id);    // a finished run is safely in the gallery
  void capped(int count, int limitMb);
  void saveFailed(int id, const QString& dir, const QString& message);
  void noteChanged(const QString& note);

 private:
  void removeListed(int id);
  void listSome();

  RunHistory* history_ = nullptr;
  Gallery* gallery_ = nullptr;
  QVector<GalleryStore::Entry> listing_;  // listed by the gallery, not yet in the history
};

}  // namespace adtree::ui
