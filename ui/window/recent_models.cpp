#include "ui/window/recent_models.h"

#include <QDir>
#include <QMenu>
#include <QSettings>

namespace adtree::ui {

namespace {
constexpr int kMaxRecent = 8;
}

RecentModels::RecentModels(QMenu* menu, QObject* parent, const QString& key)
    : QObject(parent), menu_(menu), key_(key) {}

void RecentModels::refresh() {
  menu_->clear();
  const QStringList recent = QSettings().value(key_).toStringList();
  for (const auto& dir : recent) {
    menu_->addAction(QDir::toNativeSeparators(dir), this,
                     [this, dir] { Q_EMIT openRequested(dir); });
  }
  menu_->setEnabled(!recent.isEmpty());
}

void RecentModels::add(const QString& dir) {
  QSettings s;
  QStringList recent = s.value(key_).toStringList();
  recent.removeAll(dir);
  recent.prepend(dir);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue(key_, recent);
  refresh();
}

}  // namespace adtree::ui
