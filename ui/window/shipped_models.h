// ShippedModels: File > Open Shipped Model, one entry per model directory the app ships
// (resources/models in the source tree, share/adtree-studio/models installed): the default emoji
// model, the continuous family's (CSpD) and the earlier ones the research docs name. Each entry's
// tooltip is the model's own description, so a user finds the second family without a file dialog.
#pragma once
#include <QObject>
#include <QString>

class QMenu;

namespace adtree::ui {

class ShippedModels : public QObject {
  Q_OBJECT

 public:
  explicit ShippedModels(QMenu* menu, QObject* parent = nullptr);

  void refresh();  // the menu from the models folder

 Q_SIGNALS:
  void openRequested(const QString& dir);

 private:
  QMenu* menu_ = nullptr;
};

}  // namespace adtree::ui
