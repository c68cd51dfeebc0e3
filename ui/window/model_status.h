// ModelStatus (GUI.md "Main window"): what the window says about the loaded model: a warning
// banner above the prompt while the model's weights are random (it draws noise, so a user must not
// mistake it for a trained one), and the model's name, size, device and precision in the status
// bar.
#pragma once
#include <QObject>

#include "engine/events.h"

class QLabel;
class QStatusBar;
class QWidget;

namespace adtree::ui {

class ModelStatus : public QObject {
  Q_OBJECT

 public:
  // The banner is a child of `bannerParent` (the caller places it); the labels go into `bar`.
  ModelStatus(QWidget* bannerParent, QStatusBar* bar);

  QLabel* banner() const { return banner_; }
  void show(const engine::ModelInfo& info);

 private:
  QLabel* banner_ = nullptr;
  QLabel* model_ = nullptr;
  QLabel* device_ = nullptr;
};

}  // namespace adtree::ui
