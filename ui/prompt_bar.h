// PromptBar: the top of the window (GUI.md "Main window"): the prompt with completion, the
// caption-embedding picker, Generate and Cancel; below them the method, the LANTERN switch, the
// seed and the batch count. Pure widgets: the window reads them and wires the buttons.
#pragma once
#include <QWidget>

#include "engine/events.h"

class QCheckBox;
class QComboBox;
class QPushButton;
class QSpinBox;

namespace adtree::ui {

class PromptEdit;

class PromptBar : public QWidget {
  Q_OBJECT

 public:
  explicit PromptBar(QWidget* parent = nullptr);

  PromptEdit* prompt() const { return prompt_; }
  QPushButton* generateButton() const { return generate_; }
  QPushButton* cancelButton() const { return cancel_; }
  QComboBox* methodBox() const { return method_; }
  QCheckBox* lanternBox() const { return lantern_; }
  QSpinBox* seedBox() const { return seed_; }
  QCheckBox* randomSeedBox() const { return random_seed_; }
  QSpinBox* countBox() const { return count_; }

  QString methodKey() const;
  bool lanternOn() const;  // checked and enabled (a tree method)
  // The prompt's placeholder, completion and the embedding picker for a loaded model; methods it
  // cannot run are disabled, with the reason in their tooltip.
  void setModel(const engine::ModelInfo& info);

 Q_SIGNALS:
  void generateRequested();
  void cancelRequested();
  void methodChanged();

 private:
  PromptEdit* prompt_ = nullptr;
  QPushButton* file_ = nullptr;  // caption-embedding models only
  QPushButton* generate_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QComboBox* method_ = nullptr;
  QCheckBox* lantern_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QCheckBox* random_seed_ = nullptr;
  QSpinBox* count_ = nullptr;
};

}  // namespace adtree::ui
