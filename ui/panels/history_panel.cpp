#include "ui/panels/history_panel.h"

#include <QAction>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListView>
#include <QVBoxLayout>

#include "ui/gallery/run_history.h"

namespace adtree::ui {

HistoryPanel::HistoryPanel(RunHistory* history, QWidget* parent)
    : QWidget(parent), history_(history) {
  setObjectName("historyPanel");  // one per window: scripts and tests find it by name
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  note_ = new QLabel(this);
  note_->setObjectName("galleryNote");
  note_->setWordWrap(true);
  note_->setStyleSheet("color: #555;");
  empty_ = new QLabel(tr("Finished pictures appear here and stay in the gallery across sessions. "
                         "Click one to bring it back; right-click for copy, reveal and delete."),
                      this);
  empty_->setWordWrap(true);
  empty_->setStyleSheet("color: #666;");
  view_ = new QListView(this);
  view_->setObjectName("historyView");
  view_->setModel(history_);
  view_->setViewMode(QListView::IconMode);
  view_->setIconSize(QSize(RunHistory::kThumbSize, RunHistory::kThumbSize));
  view_->setGridSize(QSize(RunHistory::kThumbSize + 60, RunHistory::kThumbSize + 64));
  view_->setResizeMode(QListView::Adjust);
  view_->setMovement(QListView::Static);
  view_->setWordWrap(true);
  view_->setUniformItemSizes(true);
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setContextMenuPolicy(Qt::ActionsContextMenu);

  auto action = [this](const QString& text, auto slot) {
    auto* a = new QAction(text, view_);
    view_->addAction(a);
    connect(a, &QAction::triggered, this, slot);
    return a;
  };
  action(tr("&Copy Image"), [this] {
    if (const int id = selectedId()) Q_EMIT copyRequested(id);
  });
  action(tr("&Reveal in File Manager"), [this] {
    if (const int id = selectedId()) Q_EMIT revealRequested(id);
  });
  action(tr("Compare the Two Selected Runs"), [this] {
    const auto ids = selectedIds();
    if (ids.size() == 2) Q_EMIT compareRequested(ids[0], ids[1]);
  });
  auto* sep = new QAction(view_);
  sep->setSeparator(true);
  view_->addAction(sep);
  auto* del = action(tr("&Delete (Picture and Run File)"), [this] {
    const auto ids = selectedIds();
    if (!ids.isEmpty()) Q_EMIT deleteRequested(ids);
  });
  del->setShortcut(QKeySequence::Delete);
  del->setShortcutContext(Qt::WidgetShortcut);

  v->addWidget(note_);
  v->addWidget(empty_);
  v->addWidget(view_, 1);
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& cur) {
            if (!quiet_ && cur.isValid()) Q_EMIT runSelected(cur.data(RunHistory::IdRole).toInt());
          });
  connect(history_, &QAbstractItemModel::rowsInserted, this, &HistoryPanel::updateEmpty);
  connect(history_, &QAbstractItemModel::rowsRemoved, this, &HistoryPanel::updateEmpty);
  connect(history_, &QAbstractItemModel::modelReset, this, &HistoryPanel::updateEmpty);
  updateEmpty();
}

void HistoryPanel::updateEmpty() {
  empty_->setVisible(history_->rowCount() == 0);
}

void HistoryPanel::setGalleryNote(const QString& text) {
  note_->setText(text);
}

int HistoryPanel::count() const {
  return history_->rowCount();
}

int HistoryPanel::selectedId() const {
  const auto cur = view_->selectionModel()->currentIndex();
  return cur.isValid() ? cur.data(RunHistory::IdRole).toInt() : 0;
}

QList<int> HistoryPanel::selectedIds() const {
  auto rows = view_->selectionModel()->selectedIndexes();
  std::sort(rows.begin(), rows.end(),
            [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  QList<int> ids;
  for (const auto& i : rows) ids << i.data(RunHistory::IdRole).toInt();
  return ids;
}

void HistoryPanel::select(int id) {
  const int r = history_->rowOf(id);
  if (r < 0) return;
  if (view_->selectionModel()->currentIndex().row() == r) {
    Q_EMIT runSelected(id);  // already current: no currentChanged, but the caller wants it shown
    return;
  }
  view_->selectionModel()->setCurrentIndex(history_->index(r), QItemSelectionModel::ClearAndSelect);
}

void HistoryPanel::setCurrent(int id) {
  const int r = history_->rowOf(id);
  if (r < 0) return;
  quiet_ = true;
  view_->selectionModel()->setCurrentIndex(history_->index(r), QItemSelectionModel::ClearAndSelect);
  quiet_ = false;
}

QString HistoryPanel::itemText(int row) const {
  return history_->index(row).data(Qt::DisplayRole).toString();
}

}  // namespace adtree::ui
