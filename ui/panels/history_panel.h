// HistoryPanel: the run history and gallery as thumbnails (GUI.md "History"): a thumbnail and
// prompt, method, time and tau per run, newest first, this session's runs and the gallery's
// pictures from earlier ones. It is a view on RunHistory (the window owns the model); it shows,
// selects and offers the commands on a picture (copy, reveal, delete, compare), which it hands to
// the window as signals.
#pragma once
#include <QWidget>

class QListView;
class QLabel;

namespace adtree::ui {

class RunHistory;

class HistoryPanel : public QWidget {
  Q_OBJECT

 public:
  explicit HistoryPanel(RunHistory* history, QWidget* parent = nullptr);

  int count() const;
  int selectedId() const;          // 0 = none
  QList<int> selectedIds() const;  // every selected run, in list order
  void select(int id);             // emits runSelected like a click
  void setCurrent(int id);         // marks the entry the window shows, without emitting
  QListView* view() const { return view_; }
  QString itemText(int row) const;
  // The line above the list: where the gallery is and how full (or that it is off).
  void setGalleryNote(const QString& text);

 Q_SIGNALS:
  void runSelected(int id);
  void compareRequested(int idA, int idB);  // two selected runs, from the context menu
  void copyRequested(int id);
  void revealRequested(int id);
  void deleteRequested(const QList<int>& ids);

 private:
  void updateEmpty();

  RunHistory* history_ = nullptr;
  QListView* view_ = nullptr;
  QLabel* empty_ = nullptr;
  QLabel* note_ = nullptr;
  bool quiet_ = false;
};

}  // namespace adtree::ui
