// CompareWindow (GUI.md "Compare"): two configurations, method and settings each, run on the same
// prompt and seed and shown side by side: image, maps, time, tau, and the speed-up of B over A.
// When both sides are lossless at greedy settings it checks, visibly, that their tokens are
// identical (the guarantee the lossless methods make); for relaxed or sampled runs a per-cell
// difference map shows where B's tokens differ from A's. Jobs go through the window's
// EngineBridge; this window only listens to its own job ids.
#pragma once
#include <QWidget>

#include <optional>

#include "decode/settings/method.h"
#include "engine/events.h"
#include "ui/runs/run_record.h"
#include "ui/runs/run_state.h"

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QCustomPlot;
class QCPColorMap;
class QLabel;
class QPushButton;
class QSpinBox;
class QToolButton;

namespace adtree::ui {

class EngineBridge;
class HeatmapPanel;
class ImageView;
class SettingsPanel;

class CompareWindow : public QWidget {
  Q_OBJECT

 public:
  CompareWindow(EngineBridge* bridge, QWidget* parent = nullptr);

  // The loaded model: bounds the settings and sizes the image views.
  void setModel(const engine::ModelInfo& info);
  void setTokenColors(const std::vector<uint8_t>& colors);  // built after the load
  void setPrompt(const QString& prompt);
  void setSeed(quint64 seed);
  // Side 0 (A) or 1 (B): its method, acceptance rule and settings.
  void setSide(int side, decode::Method method, decode::Acceptance relax,
               const decode::DecodeRequest* settings = nullptr);
  // A's AR against B's configuration: the first question a user asks. Without settings, B's
  // method runs lossless with its defaults.
  void startAgainstAr(decode::Method method, decode::Acceptance relax,
                      const decode::DecodeRequest* settings);
  // Shows two finished runs (e.g. from the history) without running anything.
  void showRecords(const RunRecord& a, const RunRecord& b);

  bool running() const { return job_[0] != 0 || job_[1] != 0; }
  const std::optional<RunRecord>& result(int side) const { return result_[side]; }
  QLabel* identityLabel() const { return identity_; }
  QLabel* speedLabel() const { return speed_; }
  QPushButton* runButton() const { return run_button_; }
  QComboBox* methodBox(int side) const { return method_[side]; }
  QCheckBox* greedyBox() const { return greedy_; }
  // Cells where B's token differs from A's (-1 until both sides have finished).
  int differingCells() const { return differing_; }
  ImageView* imageView(int side) const { return image_[side]; }

 public Q_SLOTS:
  void runBoth();
  void cancel();

 Q_SIGNALS:
  void comparisonFinished();  // both sides finished and the check is shown
  void comparisonEnded();     // both sides ended (finished, failed or cancelled)

 private:
  // The constructor's steps, in creation order (the focus chain follows it).
  QHBoxLayout* buildTopBar();
  QWidget* buildSide(int side);
  QHBoxLayout* buildComparison();
  QCustomPlot* buildDiffPlot();
  void connectSignals();
  void onStarted(const engine::JobStarted& s);
  void onSteps(const std::vector<engine::JobStep>& steps);
  void onPreview(const engine::JobPreview& p);
  void onFinished(const engine::JobFinished& f);
  void onEnded(engine::JobId job, const QString& why);
  int sideOf(engine::JobId job) const;
  void showResult(int side);
  void updateComparison();
  void updateBusy();

  EngineBridge* bridge_ = nullptr;
  std::optional<engine::ModelInfo> model_;
  QLabel* prompt_label_ = nullptr;
  QString prompt_;
  QSpinBox* seed_ = nullptr;
  QCheckBox* greedy_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QLabel* status_ = nullptr;
  QComboBox* method_[2] = {};
  QComboBox* relax_[2] = {};
  SettingsPanel* settings_[2] = {};
  QWidget* settings_box_[2] = {};
  ImageView* image_[2] = {};
  HeatmapPanel* maps_[2] = {};
  QLabel* summary_[2] = {};
  RunState run_[2];
  engine::JobId job_[2] = {0, 0};
  MapRanges ranges_[2];
  std::optional<RunRecord> result_[2];
  QLabel* identity_ = nullptr;
  QLabel* speed_ = nullptr;
  QCustomPlot* diff_plot_ = nullptr;
  QCPColorMap* diff_map_ = nullptr;
  int differing_ = -1;
};

}  // namespace adtree::ui
