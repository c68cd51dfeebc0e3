#include "ui/panels/queue_panel.h"

#include <QHBoxLayout>
#include <QItemSelectionModel>
#include <QListView>
#include <QPushButton>
#include <QVBoxLayout>

#include "ui/runs/job_queue.h"

namespace adtree::ui {

QueuePanel::QueuePanel(JobQueue* queue, QWidget* parent) : QWidget(parent), queue_(queue) {
  setObjectName("queuePanel");  // one per window: scripts and tests find it by name
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  view_ = new QListView(this);
  view_->setObjectName("queueView");
  view_->setModel(queue_);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setToolTip(
      tr("The running job and those waiting, in the order they will run. Generate "
         "while a job runs to add to the queue; Count on the top bar makes a batch."));
  cancel_ = new QPushButton(tr("Cancel Job"), this);
  cancel_->setObjectName("queueCancel");
  cancel_->setToolTip(
      tr("A waiting job is removed and never runs; the running one stops within "
         "one step"));
  up_ = new QPushButton(tr("Move Up"), this);
  down_ = new QPushButton(tr("Move Down"), this);
  clear_ = new QPushButton(tr("Clear Waiting"), this);
  clear_->setToolTip(tr("Remove every waiting job (the running one carries on)"));
  auto* buttons = new QHBoxLayout;
  for (auto* b : {cancel_, up_, down_, clear_}) buttons->addWidget(b);
  buttons->addStretch(1);
  v->addWidget(view_, 1);
  v->addLayout(buttons);

  connect(cancel_, &QPushButton::clicked, this, [this] {
    bool running = false;
    const int t = selectedTicket(&running);
    if (running) {
      Q_EMIT cancelRunningRequested();
    } else if (t) {
      queue_->cancel(t);
    }
  });
  auto move = [this](int delta) {
    bool running = false;
    const int t = selectedTicket(&running);
    if (!t || running || !queue_->move(t, delta)) return;
    for (int r = 0; r < queue_->rowCount(); ++r) {
      if (queue_->index(r).data(JobQueue::TicketRole).toInt() == t) selectRow(r);
    }
  };
  connect(up_, &QPushButton::clicked, this, [move] { move(-1); });
  connect(down_, &QPushButton::clicked, this, [move] { move(+1); });
  connect(clear_, &QPushButton::clicked, queue_, &JobQueue::clearPending);
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          &QueuePanel::updateButtons);
  for (auto sig : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved}) {
    connect(queue_, sig, this, &QueuePanel::updateButtons);
  }
  connect(queue_, &QAbstractItemModel::modelReset, this, &QueuePanel::updateButtons);
  connect(queue_, &QAbstractItemModel::rowsMoved, this, &QueuePanel::updateButtons);
  updateButtons();
}

void QueuePanel::selectRow(int row) {
  view_->selectionModel()->setCurrentIndex(queue_->index(row), QItemSelectionModel::ClearAndSelect);
}

int QueuePanel::selectedTicket(bool* running) const {
  const auto cur = view_->selectionModel()->currentIndex();
  if (!cur.isValid()) return 0;
  *running = cur.data(JobQueue::RunningRole).toBool();
  return cur.data(JobQueue::TicketRole).toInt();
}

void QueuePanel::updateButtons() {
  bool running = false;
  const int t = selectedTicket(&running);
  cancel_->setEnabled(t != 0);
  up_->setEnabled(t != 0 && !running);
  down_->setEnabled(t != 0 && !running);
  clear_->setEnabled(queue_->pending() > 0);
}

}  // namespace adtree::ui
