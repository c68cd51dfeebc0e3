// RunHistory: the runs the studio knows, newest first, as a Qt item model (GUI.md "History"): the
// session's runs and the gallery's pictures from earlier sessions. It owns the records; the
// History panel is a view on it, and the window, the compare window and the exports look runs up
// here by id. A gallery entry from an earlier session is listed from its picture and settings and
// read from its run file the first time it is shown; older read-back entries are let go again
// (they are on disk), so a large gallery costs thumbnails, not traces.
#pragma once
#include <QAbstractListModel>
#include <QIcon>
#include <QVector>

#include <functional>
#include <optional>

#include "ui/gallery/gallery_store.h"
#include "ui/runs/run_record.h"

namespace adtree::ui {

class RunHistory : public QAbstractListModel {
  Q_OBJECT

 public:
  enum Role { IdRole = Qt::UserRole + 1 };
  static constexpr int kThumbSize = 96;  // thumbnails are square, nearest-neighbour
  // Runs kept whole in memory: those not in the gallery (their only copy), and read-back ones.
  static constexpr int kMaxLoaded = 50;

  explicit RunHistory(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

  // A finished or opened run: gets the next id, goes on top. Returns the id.
  int add(RunRecord r);
  // A gallery picture from an earlier session, listed from its settings (read when shown).
  int addStored(const GalleryStore::Entry& e);
  // The record with this id, or null. Its stats are null while a stored entry is not read yet.
  const RunRecord* find(int id) const;
  // As find, reading a stored entry's run file first through `read` when needed.
  const RunRecord* load(int id,
                        const std::function<std::optional<RunRecord>(const QString&)>& read);
  void setGalleryBase(int id, const QString& base);
  QString galleryBase(int id) const;
  int idOfGalleryBase(const QString& base) const;  // 0 = none
  bool remove(int id);
  int rowOf(int id) const;
  int idAt(int row) const;

 private:
  struct Item {
    RunRecord record;
    QString galleryBase;   // empty: not (yet) in the gallery
    double listedTau = 0;  // a stored entry's tau from its settings, until its run is read
    QIcon thumb;
    QString text, tip;
  };
  static QIcon thumbnail(const QImage& img);
  static void describe(Item& it);
  void letGo();  // drops the traces of the oldest read-back gallery entries

  QVector<Item> items_;  // newest first
  int next_id_ = 1;
};

}  // namespace adtree::ui
