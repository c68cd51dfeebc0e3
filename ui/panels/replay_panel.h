// ReplayPanel: scrub through the steps of a finished run (GUI.md "Replay"). A slider with step
// buttons (keyboard: the slider's arrows / PageUp / Home / End, or Alt+Left / Alt+Right anywhere in
// the window) chooses a step; the window then shows the image and maps as they were after it, and
// the panel draws that step's draft tree (TreeView) with ADT-Tree's decision in its caption.
#pragma once
#include <QWidget>

#include "ui/runs/run_state.h"

class QLabel;
class QSlider;
class QToolButton;

namespace adtree::ui {

class TreeView;

class ReplayPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ReplayPanel(QWidget* parent = nullptr);

  // A run is on screen (finished or restored): the slider spans its steps and sits at the end.
  void setRun(const RunState& run);
  // No finished run (a run is in progress, or none): the slider is disabled.
  void clearRun(const QString& why);
  // Moves the slider (emits stepChanged when the step changes).
  void setStep(int step);
  int step() const;
  int steps() const { return steps_; }
  // Draws the trace of the current step (the window calls it after stepChanged; null = none).
  void showTrace(const decode::StepTrace* trace, const decode::StepRecord* record);

  QSlider* slider() const { return slider_; }
  TreeView* treeView() const { return tree_; }
  QString stepText() const;

 public Q_SLOTS:
  void stepBack();
  void stepForward();

 Q_SIGNALS:
  void stepChanged(int step);  // the step to show (the last one = the whole run)

 private:
  QSlider* slider_ = nullptr;
  QToolButton *first_ = nullptr, *back_ = nullptr, *fwd_ = nullptr, *last_ = nullptr;
  QLabel* label_ = nullptr;
  QLabel* detail_ = nullptr;  // the tree's caption at a readable size, whatever the zoom
  TreeView* tree_ = nullptr;
  int steps_ = 0;
  int grid_w_ = 1;
};

}  // namespace adtree::ui
