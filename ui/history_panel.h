// HistoryPanel: the session's runs as a gallery (GUI.md "History"): a thumbnail and prompt, method,
// time and tau per run, newest first. Selecting one asks the window to restore it; the window owns
// the records, the panel only shows them (a QStandardItemModel behind a QListView in icon mode).
#pragma once
#include <QWidget>

#include "ui/run_record.h"

class QListView;
class QStandardItemModel;
class QLabel;

namespace adtree::ui {

class HistoryPanel : public QWidget {
  Q_OBJECT

 public:
  explicit HistoryPanel(QWidget* parent = nullptr);

  // Adds the run at the top (or replaces the entry with the same id) and selects it without
  // emitting runSelected (the window already shows it).
  void addRun(const RunRecord& r);
  void removeRun(int id);
  void clear();
  int count() const;
  int selectedId() const;   // 0 = none
  void select(int id);      // emits runSelected like a click
  void setCurrent(int id);  // marks the entry the window shows, without emitting
  QListView* view() const { return view_; }
  QString itemText(int row) const;

 Q_SIGNALS:
  void runSelected(int id);
  void compareRequested(int idA, int idB);  // two selected runs, from the context menu

 private:
  int rowOf(int id) const;

  QListView* view_ = nullptr;
  QStandardItemModel* model_ = nullptr;
  QLabel* empty_ = nullptr;
  bool quiet_ = false;
};

}  // namespace adtree::ui
