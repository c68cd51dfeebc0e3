#include "ui/runs/job_queue.h"

#include <QFont>

#include "ui/panels/method_names.h"

namespace adtree::ui {

JobQueue::JobQueue(QObject* parent) : QAbstractListModel(parent) {}

int JobQueue::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(pending_.size()) + (running_ ? 1 : 0);
}

QVariant JobQueue::data(const QModelIndex& index, int role) const {
  const int row = index.row();
  if (!index.isValid() || row >= rowCount()) return {};
  const bool isRunning = running_ && row == 0;
  const QueuedJob& j = isRunning ? *running_ : pending_[row - (running_ ? 1 : 0)];
  switch (role) {
    case Qt::DisplayRole: {
      const QString batch =
          j.batchSize > 1 ? tr(" (%1 of %2)").arg(j.batchIndex).arg(j.batchSize) : QString();
      const QString what =
          tr("“%1” · %2 · seed %3%4").arg(j.prompt, method_label(j.method)).arg(j.seed).arg(batch);
      // No position number in the text: an item's data must not change when others move
      // (Qt's model contract; the list's order is the order the jobs will run in).
      return isRunning ? tr("▶ running: %1").arg(what) : tr("waiting: %1").arg(what);
    }
    case Qt::FontRole: {
      QFont f;
      f.setBold(isRunning);
      return f;
    }
    case TicketRole:
      return j.ticket;
    case RunningRole:
      return isRunning;
    default:
      return {};
  }
}

int JobQueue::enqueue(QueuedJob job) {
  job.ticket = next_ticket_++;
  const int row = rowCount();
  beginInsertRows({}, row, row);
  pending_.push_back(std::move(job));
  endInsertRows();
  return pending_.back().ticket;
}

void JobQueue::enqueueBatch(const QueuedJob& job, int count) {
  const int batch = next_batch_++;
  for (int i = 0; i < count; ++i) {
    QueuedJob j = job;
    j.batch = batch;
    j.batchIndex = i + 1;
    j.batchSize = count;
    j.seed = job.seed + quint64(i);
    j.request.seed = j.seed;
    enqueue(std::move(j));
  }
}

std::optional<QueuedJob> JobQueue::startNext() {
  if (running_ || pending_.isEmpty()) return std::nullopt;
  // One model reset: row 0 changes from the first pending job to the running one.
  beginResetModel();
  running_ = pending_.takeFirst();
  ++begun_;
  endResetModel();
  return running_;
}

void JobQueue::finishRunning() {
  if (!running_) return;
  beginRemoveRows({}, 0, 0);
  running_.reset();
  if (pending_.isEmpty()) begun_ = 0;  // before the signal: views read begun() in it
  endRemoveRows();
}

int JobQueue::rowOfPending(int ticket) const {
  for (int i = 0; i < pending_.size(); ++i) {
    if (pending_[i].ticket == ticket) return i;
  }
  return -1;
}

bool JobQueue::cancel(int ticket) {
  const int i = rowOfPending(ticket);
  if (i < 0) return false;
  const int row = i + (running_ ? 1 : 0);
  beginRemoveRows({}, row, row);
  pending_.removeAt(i);
  endRemoveRows();
  if (!running_ && pending_.isEmpty()) begun_ = 0;
  return true;
}

int JobQueue::cancelRestOfRunningBatch() {
  if (!running_ || running_->batchSize <= 1) return 0;
  int n = 0;
  for (int i = int(pending_.size()) - 1; i >= 0; --i) {
    if (pending_[i].batch == running_->batch && cancel(pending_[i].ticket)) ++n;
  }
  return n;
}

bool JobQueue::move(int ticket, int delta) {
  const int i = rowOfPending(ticket);
  if (i < 0) return false;
  const int to = std::clamp(i + delta, 0, int(pending_.size()) - 1);
  if (to == i) return true;
  const int off = running_ ? 1 : 0;
  // Qt's destination row is the row before which the item goes, counted before the move.
  beginMoveRows({}, i + off, i + off, {}, (to > i ? to + 1 : to) + off);
  pending_.move(i, to);
  endMoveRows();
  return true;
}

void JobQueue::clearPending() {
  if (pending_.isEmpty()) return;
  const int off = running_ ? 1 : 0;
  beginRemoveRows({}, off, off + int(pending_.size()) - 1);
  pending_.clear();
  endRemoveRows();
  if (!running_) begun_ = 0;
}

}  // namespace adtree::ui
