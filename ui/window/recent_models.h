// RecentModels: File > Open Recent (and Model > Recent Imports), the model directories a user
// opened (imported) last, newest first, at most eight, kept in the settings under `key`
// (model/recent, model/recentImports).
#pragma once
#include <QObject>
#include <QString>

class QMenu;

namespace adtree::ui {

class RecentModels : public QObject {
  Q_OBJECT

 public:
  explicit RecentModels(QMenu* menu, QObject* parent = nullptr,
                        const QString& key = QStringLiteral("model/recent"));

  void add(const QString& dir);  // moves it to the top
  void refresh();                // the menu from the settings

 Q_SIGNALS:
  void openRequested(const QString& dir);

 private:
  QMenu* menu_ = nullptr;
  QString key_;
};

}  // namespace adtree::ui
