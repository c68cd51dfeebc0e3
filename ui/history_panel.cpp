#include "ui/history_panel.h"

#include <QAction>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListView>
#include <QPainter>
#include <QStandardItemModel>
#include <QVBoxLayout>

namespace adtree::ui {

namespace {
constexpr int kIdRole = Qt::UserRole + 1;
constexpr int kThumb = 96;

// A crisp, square thumbnail: nearest-neighbour so 4x4-pixel tokens stay visible.
QIcon thumbnail(const QImage& img) {
  QPixmap pm(kThumb, kThumb);
  pm.fill(QColor(235, 235, 235));
  if (!img.isNull()) {
    QPainter p(&pm);
    const QImage s = img.scaled(kThumb, kThumb, Qt::KeepAspectRatio, Qt::FastTransformation);
    p.drawImage((kThumb - s.width()) / 2, (kThumb - s.height()) / 2, s);
  } else {
    QPainter p(&pm);
    p.setPen(Qt::darkGray);
    p.drawText(pm.rect(), Qt::AlignCenter, QObject::tr("no picture"));
  }
  return QIcon(pm);
}
}  // namespace

HistoryPanel::HistoryPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  empty_ = new QLabel(tr("Finished runs of this session appear here. Click one to bring it back; "
                         "File ▸ Save Run keeps it."),
                      this);
  empty_->setWordWrap(true);
  empty_->setStyleSheet("color: #666;");
  model_ = new QStandardItemModel(this);
  view_ = new QListView(this);
  view_->setObjectName("historyView");
  view_->setModel(model_);
  view_->setViewMode(QListView::IconMode);
  view_->setIconSize(QSize(kThumb, kThumb));
  view_->setGridSize(QSize(kThumb + 60, kThumb + 64));
  view_->setResizeMode(QListView::Adjust);
  view_->setMovement(QListView::Static);
  view_->setWordWrap(true);
  view_->setUniformItemSizes(true);
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* compare = new QAction(tr("Compare the two selected runs"), view_);
  view_->addAction(compare);
  connect(compare, &QAction::triggered, this, [this] {
    const auto rows = view_->selectionModel()->selectedIndexes();
    if (rows.size() == 2) {
      Q_EMIT compareRequested(rows[0].data(kIdRole).toInt(), rows[1].data(kIdRole).toInt());
    }
  });
  v->addWidget(empty_);
  v->addWidget(view_, 1);
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& cur) {
            if (!quiet_ && cur.isValid()) Q_EMIT runSelected(cur.data(kIdRole).toInt());
          });
}

int HistoryPanel::rowOf(int id) const {
  for (int r = 0; r < model_->rowCount(); ++r) {
    if (model_->item(r)->data(kIdRole).toInt() == id) return r;
  }
  return -1;
}

void HistoryPanel::addRun(const RunRecord& r) {
  QString prompt = r.prompt.isEmpty() ? tr("(no prompt)") : r.prompt;
  if (prompt.size() > 28) prompt = prompt.left(27) + "…";
  auto* item = new QStandardItem(thumbnail(r.image), QStringLiteral("%1\n%2 · τ %3 · %4 s")
                                                         .arg(prompt, r.method)
                                                         .arg(r.stats.summary.tau, 0, 'f', 2)
                                                         .arg(r.elapsedMs / 1000.0, 0, 'f', 1));
  item->setData(r.id, kIdRole);
  item->setToolTip(QStringLiteral("<b>%1</b><br>%2<br>%3 tokens in %4 steps, %5 target forwards")
                       .arg(r.prompt.toHtmlEscaped(), r.summaryLine().toHtmlEscaped())
                       .arg(r.stats.summary.tokens)
                       .arg(r.stats.summary.steps)
                       .arg(r.stats.summary.target_forwards));
  quiet_ = true;
  const int old = rowOf(r.id);
  if (old >= 0) model_->removeRow(old);
  model_->insertRow(0, item);
  view_->selectionModel()->setCurrentIndex(model_->index(0, 0),
                                           QItemSelectionModel::ClearAndSelect);
  quiet_ = false;
  empty_->setVisible(false);
}

void HistoryPanel::removeRun(int id) {
  const int r = rowOf(id);
  if (r >= 0) model_->removeRow(r);
  empty_->setVisible(model_->rowCount() == 0);
}

void HistoryPanel::clear() {
  model_->clear();
  empty_->setVisible(true);
}

int HistoryPanel::count() const {
  return model_->rowCount();
}

int HistoryPanel::selectedId() const {
  const auto cur = view_->selectionModel()->currentIndex();
  return cur.isValid() ? cur.data(kIdRole).toInt() : 0;
}

void HistoryPanel::select(int id) {
  const int r = rowOf(id);
  if (r < 0) return;
  if (view_->selectionModel()->currentIndex().row() == r) {
    Q_EMIT runSelected(id);  // already current: no currentChanged, but the caller wants it shown
    return;
  }
  view_->selectionModel()->setCurrentIndex(model_->index(r, 0),
                                           QItemSelectionModel::ClearAndSelect);
}

void HistoryPanel::setCurrent(int id) {
  const int r = rowOf(id);
  if (r < 0) return;
  quiet_ = true;
  view_->selectionModel()->setCurrentIndex(model_->index(r, 0),
                                           QItemSelectionModel::ClearAndSelect);
  quiet_ = false;
}

QString HistoryPanel::itemText(int row) const {
  return row >= 0 && row < model_->rowCount() ? model_->item(row)->text() : QString();
}

}  // namespace adtree::ui
