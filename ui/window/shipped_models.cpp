#include "ui/window/shipped_models.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>

#include "util/resource_paths.h"

namespace adtree::ui {

namespace {

// model.json's description, else its family: the entry's tooltip. Unreadable: no tooltip (opening
// the model then says what is wrong with it).
QString describe(const QString& dir) {
  QFile f(dir + "/model.json");
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QJsonObject m = QJsonDocument::fromJson(f.readAll()).object();
  const QString description = m.value("description").toString();
  if (!description.isEmpty()) return description;
  return m.value("family").toString() == "continuous"
             ? QObject::tr("A continuous-token model (AR and CSpD)")
             : QString();
}

}  // namespace

ShippedModels::ShippedModels(QMenu* menu, QObject* parent) : QObject(parent), menu_(menu) {
  menu_->setObjectName("shippedModels");
  menu_->setToolTipsVisible(true);
  refresh();
}

void ShippedModels::refresh() {
  menu_->clear();
  for (const auto& path : util::shipped_models()) {
    const QString dir = QString::fromStdString(path);
    auto* a =
        menu_->addAction(QDir(dir).dirName(), this, [this, dir] { Q_EMIT openRequested(dir); });
    a->setToolTip(describe(dir));
    a->setData(dir);
  }
  menu_->setEnabled(!menu_->isEmpty());
  if (menu_->isEmpty()) menu_->setToolTip(tr("No shipped models were found next to the program."));
}

}  // namespace adtree::ui
