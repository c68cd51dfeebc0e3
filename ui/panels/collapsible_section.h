// CollapsibleSection: a titled group whose body folds away with one click (the settings panel has
// more knobs than fit on a laptop screen; users open the group they are tuning).
#pragma once
#include <QWidget>

class QToolButton;
class QFormLayout;

namespace adtree::ui {

class CollapsibleSection : public QWidget {
  Q_OBJECT

 public:
  explicit CollapsibleSection(const QString& title, QWidget* parent = nullptr);
  QFormLayout* form() const { return form_; }
  void setExpanded(bool expanded);

 private:
  QToolButton* header_ = nullptr;
  QWidget* body_ = nullptr;
  QFormLayout* form_ = nullptr;
};

}  // namespace adtree::ui
