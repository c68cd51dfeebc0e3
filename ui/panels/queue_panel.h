// QueuePanel: the job queue as a list with its commands (GUI.md "Batches and the queue"): cancel
// the selected job (a waiting one is removed and never runs; the running one stops within a step),
// move a waiting job up or down, clear everything that waits.
#pragma once
#include <QWidget>

class QListView;
class QPushButton;

namespace adtree::ui {

class JobQueue;

class QueuePanel : public QWidget {
  Q_OBJECT

 public:
  explicit QueuePanel(JobQueue* queue, QWidget* parent = nullptr);

  QListView* view() const { return view_; }
  QPushButton* cancelButton() const { return cancel_; }
  QPushButton* upButton() const { return up_; }
  QPushButton* downButton() const { return down_; }
  QPushButton* clearButton() const { return clear_; }
  void selectRow(int row);

 Q_SIGNALS:
  void cancelRunningRequested();

 private:
  int selectedTicket(bool* running) const;
  void updateButtons();

  JobQueue* queue_ = nullptr;
  QListView* view_ = nullptr;
  QPushButton *cancel_ = nullptr, *up_ = nullptr, *down_ = nullptr, *clear_ = nullptr;
};

}  // namespace adtree::ui
