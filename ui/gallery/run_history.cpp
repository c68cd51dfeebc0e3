#include "ui/gallery/run_history.h"

#include <QPainter>
#include <QPixmap>

namespace adtree::ui {

RunHistory::RunHistory(QObject* parent) : QAbstractListModel(parent) {}

int RunHistory::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(items_.size());
}

QVariant RunHistory::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= items_.size()) return {};
  const Item& it = items_[index.row()];
  switch (role) {
    case Qt::DisplayRole:
      return it.text;
    case Qt::DecorationRole:
      return it.thumb;
    case Qt::ToolTipRole:
      return it.tip;
    case IdRole:
      return it.record.id;
    default:
      return {};
  }
}

// A crisp, square thumbnail: nearest-neighbour so 4x4-pixel tokens stay visible.
QIcon RunHistory::thumbnail(const QImage& img) {
  QPixmap pm(kThumbSize, kThumbSize);
  pm.fill(QColor(235, 235, 235));
  QPainter p(&pm);
  if (!img.isNull()) {
    const QImage s =
        img.scaled(kThumbSize, kThumbSize, Qt::KeepAspectRatio, Qt::FastTransformation);
    p.drawImage((kThumbSize - s.width()) / 2, (kThumbSize - s.height()) / 2, s);
  } else {
    p.setPen(Qt::darkGray);
    p.drawText(pm.rect(), Qt::AlignCenter, QObject::tr("no picture"));
  }
  return QIcon(pm);
}

void RunHistory::describe(Item& it) {
  const RunRecord& r = it.record;
  QString prompt = r.prompt.isEmpty() ? tr("(no prompt)") : r.prompt;
  if (prompt.size() > 28) prompt = prompt.left(27) + "…";
  const double tau = r.stats ? r.stats->summary.tau : it.listedTau;
  it.text = QStringLiteral("%1\n%2 · τ %3 · %4 s")
                .arg(prompt, r.method)
                .arg(tau, 0, 'f', 2)
                .arg(r.elapsedMs / 1000.0, 0, 'f', 1);
  it.tip = QStringLiteral("<b>%1</b><br>%2")
               .arg(r.prompt.toHtmlEscaped(), r.summaryLine().toHtmlEscaped());
  if (r.stats) {
    it.tip += QStringLiteral("<br>%1 tokens in %2 steps, %3 target forwards")
                  .arg(r.stats->summary.tokens)
                  .arg(r.stats->summary.steps)
                  .arg(r.stats->summary.target_forwards);
  }
  if (!it.galleryBase.isEmpty()) it.tip += tr("<br>In the gallery: %1.png").arg(it.galleryBase);
}

int RunHistory::add(RunRecord r) {
  r.id = next_id_++;
  Item it;
  it.record = std::move(r);
  it.thumb = thumbnail(it.record.image);
  describe(it);
  beginInsertRows({}, 0, 0);
  items_.prepend(std::move(it));
  endInsertRows();
  letGo();
  return items_.front().record.id;
}

int RunHistory::addStored(const GalleryStore::Entry& e) {
  const auto& s = e.settings;
  Item it;
  RunRecord& r = it.record;
  r.id = next_id_++;
  r.prompt = QString::fromStdString(s.value("prompt", std::string()));
  const auto ms = s.value("method_settings", nlohmann::json::object());
  r.method = QString::fromStdString(ms.is_object() ? ms.value("method", std::string()) : "");
  const auto res = s.value("result", nlohmann::json::object());
  r.label = QString::fromStdString(res.is_object() ? res.value("label", std::string()) : "");
  r.elapsedMs = res.is_object() ? res.value("elapsed_ms", 0.0) : 0.0;
  r.seed = s.value("seed", uint64_t(0));
  const auto model = s.value("model", nlohmann::json::object());
  r.model = QString::fromStdString(model.is_object() ? model.value("dir", std::string()) : "");
  r.image = e.image;
  it.galleryBase = e.base;
  it.listedTau = res.is_object() ? res.value("tau", 0.0) : 0.0;
  it.thumb = thumbnail(r.image);
  describe(it);
  // Older sessions' pictures go below this session's runs, in the order they were made.
  int row = 0;
  while (row < items_.size() && items_[row].record.id > 0 && items_[row].galleryBase.isEmpty())
    ++row;
  while (row < items_.size() && !items_[row].galleryBase.isEmpty() &&
         items_[row].galleryBase > e.base)
    ++row;
  beginInsertRows({}, row, row);
  items_.insert(row, std::move(it));
  endInsertRows();
  return items_[row].record.id;
}

const RunRecord* RunHistory::find(int id) const {
  const int row = rowOf(id);
  return row >= 0 ? &items_[row].record : nullptr;
}

const RunRecord* RunHistory::load(
    int id, const std::function<std::optional<RunRecord>(const QString&)>& read) {
  const int row = rowOf(id);
  if (row < 0) return nullptr;
  Item& it = items_[row];
  if (!it.record.stats) {
    auto r = read(it.galleryBase);
    if (!r) return nullptr;
    r->id = id;
    if (r->image.isNull()) r->image = it.record.image;
    it.record = std::move(*r);
    describe(it);
    Q_EMIT dataChanged(index(row), index(row));
    letGo();
  }
  return &items_[rowOf(id)].record;
}

void RunHistory::setGalleryBase(int id, const QString& base) {
  const int row = rowOf(id);
  if (row < 0) return;
  items_[row].galleryBase = base;
  describe(items_[row]);
  Q_EMIT dataChanged(index(row), index(row));
  letGo();
}

QString RunHistory::galleryBase(int id) const {
  const int row = rowOf(id);
  return row >= 0 ? items_[row].galleryBase : QString();
}

int RunHistory::idOfGalleryBase(const QString& base) const {
  for (const auto& it : items_) {
    if (it.galleryBase == base) return it.record.id;
  }
  return 0;
}

bool RunHistory::remove(int id) {
  const int row = rowOf(id);
  if (row < 0) return false;
  beginRemoveRows({}, row, row);
  items_.removeAt(row);
  endRemoveRows();
  return true;
}

int RunHistory::rowOf(int id) const {
  for (int r = 0; r < items_.size(); ++r) {
    if (items_[r].record.id == id) return r;
  }
  return -1;
}

int RunHistory::idAt(int row) const {
  return row >= 0 && row < items_.size() ? items_[row].record.id : 0;
}

void RunHistory::letGo() {
  // Newest first: the first kMaxLoaded whole records stay. Beyond them, a gallery entry keeps
  // only its listing (its run file is on disk); a run that exists nowhere else is dropped.
  int loaded = 0;
  for (int row = 0; row < items_.size(); ++row) {
    Item& it = items_[row];
    if (!it.record.stats) continue;
    if (++loaded <= kMaxLoaded) continue;
    if (!it.galleryBase.isEmpty()) {
      it.record.stats.reset();
      it.record.tokens.clear();
    } else {
      beginRemoveRows({}, row, row);
      items_.removeAt(row);
      endRemoveRows();
      --row;
    }
  }
}

}  // namespace adtree::ui
