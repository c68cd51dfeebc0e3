// MainWindow (GUI.md "Main window"): the prompt bar on top; the growing image, the per-cell
// heatmaps and the per-step plots in the middle; settings, replay, inspector, histograms, history
// and queue in docks; progress and model in the status area. It is layout and wiring: it forwards
// intent to the EngineBridge (one job at a time, the rest wait in the JobQueue), keeps finished
// runs in the RunHistory (which the Gallery saves), and paints what comes back, throttled by one
// frame timer. It never runs model code and never waits on the engine.
#pragma once
#include <QMainWindow>

#include <memory>
#include <optional>

#include "decode/settings/method.h"
#include "engine/events.h"
#include "ui/runs/run_record.h"
#include "ui/runs/run_state.h"
#include "ui/window/main_docks.h"
#include "ui/window/window_commands.h"

namespace adtree::ui {

class CompareWindow;
class EngineBridge;
class Exports;
class Gallery;
class JobQueue;
class MainActions;
class ModelStatus;
class PromptBar;
class RunHistory;
class RunLibrary;
class RunView;

class MainWindow : public QMainWindow, public WindowCommands {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  // previewIntervalMs: how often the engine decodes a preview of the partial image (0 = never).
  explicit MainWindow(double previewIntervalMs, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a model directory on the engine thread; `createRandom` writes a random model of that GPT
  // size first if the directory has none.
  void openModel(const QString& dir, const QString& createRandom = {}) override;
  void openDefaultModel() override;
  void importCheckpoint(const QString& path = {}) override;

  bool isRunning() const { return current_job_ != 0; }
  bool hasModel() const { return model_.has_value(); }
  const std::optional<engine::ModelInfo>& model() const override { return model_; }
  const RunState& run() const;
  // The engine's time for the last finished job (conditioning, decoding, final VQ decode).
  double lastJobMs() const { return last_job_ms_; }
  double lastDecodeCpuMs() const { return last_decode_cpu_ms_; }

  // The compare window, created on first use (scripts and the Run menu open it); every other
  // widget is found by its objectName.
  CompareWindow* compareWindow();
  void showCompareWindow() override;

  // The runs (this session's and the gallery's), the queue, the gallery.
  RunHistory* history() const;
  JobQueue* queue() const { return queue_; }
  Gallery* gallery() const;
  // The run on screen (null = none).
  const RunRecord* shownRecord() const;
  // The cell whose distribution the inspector shows (-1 = none).
  int inspectedCell() const { return inspected_cell_; }

  // What the menu commands do after their file dialogs (tests and scripts call them directly).
  // Each returns false after showing a readable error.
  bool openRunFile(const QString& path) override;
  // A dropped path: a directory opens as a model, a .pt / .pth / .bin opens the import dialog, a
  // PNG restores its settings, another file opens as a run (drag and drop calls this).
  bool openDropped(const QString& path);
  // File > Export and Save Run: each write with and without its file dialog.
  Exports* exports() const { return exports_.get(); }
  // Edit > Copy Image (Ctrl+C): the picture on screen to the clipboard; false if there is none.
  bool copyImage() override;
  // A PNG exported with its settings (dropped on the window): prompt, seed, method, settings.
  bool restoreFromPng(const QString& path);
  // Shows history entry `id` (as a click in the gallery does).
  void showHistoryRun(int id);
  // Deletes history entries and, for gallery entries, their files.
  void deleteRuns(const QList<int>& ids);
  // The gallery's folder: applies at once (the history lists that folder's pictures) and, with
  // `remember`, is kept in the settings.
  void setGalleryDir(const QString& dir, bool remember = true);
  // The token distribution view for `cell` (as a click on the image or a map does).
  void inspectCell(int cell);
  // Brings a dock to the front: "inspector", "histograms", "history", "queue", "replay" or
  // "settings".
  void raiseDock(const QString& name);

 public Q_SLOTS:
  // Queues Count jobs with consecutive seeds; starts the first if nothing runs.
  void generate() override;
  void cancel() override;  // the running job; waiting ones stay queued

 Q_SIGNALS:
  void modelReady();  // a model finished loading
  void modelLoadFailed(const QString& message);
  void generationFinished();                 // the run's final image and statistics are shown
  void generationEnded(const QString& how);  // "finished", "cancelled" or "failed"
  void gallerySaved(int id);                 // a finished run is safely in the gallery

 protected:
  void closeEvent(QCloseEvent* e) override;
  void showEvent(QShowEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void buildUi();
  void connectUi();
  void connectHistory();
  void connectBridge();
  void connectLibrary();
  void loadSettings();
  void saveSettings() const;
  void setBusyUi();
  void startNext();
  void endRun(const QString& how, const QString& status);
  void onMethodChanged();
  void status(const QString& message, int timeoutMs = 0);
  void onReplayStep(int step);
  void showRecord(const RunRecord& r);

  void onModelLoaded(const engine::ModelLoaded& loaded);
  void onTokenColors(const QString& dir, const std::vector<uint8_t>& colors);
  void onLoadFailed(const QString& dir, const QString& message);
  void onJobStarted(const engine::JobStarted& s);
  void onSteps(const std::vector<engine::JobStep>& steps);
  void onPreview(const engine::JobPreview& p);
  void onFinished(const engine::JobFinished& f);
  void onFailed(engine::JobId job, const QString& message);
  void onCancelled(engine::JobId job, qint64 tokens);

  EngineBridge* bridge_ = nullptr;
  RunLibrary* library_ = nullptr;
  JobQueue* queue_ = nullptr;
  std::unique_ptr<Exports> exports_;
  std::optional<engine::ModelInfo> model_;
  QString loading_dir_;
  engine::JobId current_job_ = 0;
  MapRanges pending_ranges_;
  double last_job_ms_ = 0, last_decode_cpu_ms_ = 0;

  // Widgets
  PromptBar* bar_ = nullptr;
  RunView* view_ = nullptr;
  MainDocks docks_;
  MainActions* actions_ = nullptr;
  ModelStatus* model_status_ = nullptr;
  CompareWindow* compare_ = nullptr;
  int shown_id_ = 0;
  int inspected_cell_ = -1;
  bool first_layout_ = false;  // no saved layout: size the docks when first shown
};

}  // namespace adtree::ui
