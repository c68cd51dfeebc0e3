// JobQueue: the generation jobs waiting their turn, and the one running (GUI.md "Batches and the
// queue"), as a Qt item model. The engine gets one job at a time; the rest wait here, so the user
// can cancel any of them before it starts (it then never runs) and reorder them. Row 0 is the
// running job while there is one; pending jobs follow in the order they will run.
#pragma once
#include <QAbstractListModel>
#include <QVector>

#include <optional>

#include "decode/settings/method.h"

namespace adtree::ui {

struct QueuedJob {
  int ticket = 0;  // the queue's number for it (unique in a session)
  QString prompt;
  decode::Method method = decode::Method::Ar;
  quint64 seed = 0;
  decode::DecodeRequest request;
  int batchIndex = 1, batchSize = 1;  // "2 of 3" for a batch made by one Generate click
  int batch = 0;                      // the Generate click it came from (unique in a session)
};

class JobQueue : public QAbstractListModel {
  Q_OBJECT

 public:
  enum Role { TicketRole = Qt::UserRole + 1, RunningRole };

  explicit JobQueue(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

  int enqueue(QueuedJob job);  // returns its ticket
  // One Generate click: `count` pictures of `job` with consecutive seeds job.seed, job.seed + 1,
  // ... (the CLI's --count does the same), marked as one batch.
  void enqueueBatch(const QueuedJob& job, int count);
  // The next pending job becomes the running one (nullopt: nothing waits).
  std::optional<QueuedJob> startNext();
  void finishRunning();  // the running job ended (finished, failed or cancelled)
  int pending() const { return int(pending_.size()); }
  const QueuedJob& pendingAt(int i) const { return pending_[i]; }
  // Removes a pending job (it never runs). False for the running job or an unknown ticket.
  bool cancel(int ticket);
  // Removes the waiting jobs of the running job's batch (they would fail as it failed); returns
  // how many.
  int cancelRestOfRunningBatch();
  // Moves a pending job by `delta` places (clamped). False if it is not pending.
  bool move(int ticket, int delta);
  void clearPending();
  // Jobs begun since the queue was last empty, and all of them including those waiting: the
  // progress bar says "job begun of total".
  int begun() const { return begun_; }
  int total() const { return begun_ + pending(); }

 private:
  int rowOfPending(int ticket) const;

  std::optional<QueuedJob> running_;
  QVector<QueuedJob> pending_;
  int next_ticket_ = 1;
  int next_batch_ = 1;
  int begun_ = 0;
};

}  // namespace adtree::ui
