// RecentModels: File > Open Recent, the model directories a user opened last (newest first, at
// most eight), kept in the settings under model/recent.
#pragma once
#include <QObject>
#include <QString>

class QMenu;

namespace adtree::ui {

class RecentModels : public QObject {
  Q_OBJECT

 public:
  explicit RecentModels(QMenu* menu, QObject* parent = nullptr);

  void add(const QString& dir);  // moves it to the top
  void refresh();                // the menu from the settings

 Q_SIGNALS:
  void openRequested(const QString& dir);

 private:
  QMenu* menu_ = nullptr;
};

}  // namespace adtree::ui
