// RunView: the middle of the main window (GUI.md "Main window"): the progress row, the growing
// image, the per-cell heatmaps and the per-step plots, and the RunState they all draw. It paints a
// live run at the frame rate (one timer: the image ~30 times a second, maps and plots 5 times),
// shows a finished or restored run whole, and a replayed step. The window tells it what happened;
// it owns no engine and no history.
#pragma once
#include <QElapsedTimer>
#include <QImage>
#include <QTimer>
#include <QWidget>

#include "engine/events.h"
#include "ui/runs/run_record.h"
#include "ui/runs/run_state.h"

class QSettings;
class QLabel;
class QProgressBar;
class QSplitter;

namespace adtree::ui {

class HeatmapPanel;
class JobQueue;
class ImageView;
class PlotPanel;

class RunView : public QWidget {
  Q_OBJECT

 public:
  explicit RunView(QWidget* parent = nullptr);

  const RunState& run() const { return run_; }
  ImageView* image() const { return image_; }
  HeatmapPanel* heatmaps() const { return heatmaps_; }
  PlotPanel* plots() const { return plots_; }
  QProgressBar* progressBar() const { return progress_; }
  QLabel* progressLabel() const { return progress_text_; }
  // The finished (or shown) picture; null while running or before the first run.
  const QImage& picture() const { return picture_; }

  // The empty canvas and maps of a model's grid, so the window shows what is coming.
  void showEmpty(const engine::ModelInfo& info, const MapRanges& ranges);
  void setPlaceholder(const QString& text);
  void start(const engine::JobStarted& s, const MapRanges& ranges);
  void addSteps(const std::vector<engine::JobStep>& steps);
  void preview(const engine::JobPreview& p);
  void finish(const engine::JobFinished& f);
  void end();  // the run stopped (finished, failed, cancelled): one last full paint
  void showRecord(const RunRecord& r, const MapRanges& ranges);
  // Replay: the run as it stood after `step` (the whole run past its last step). False when
  // there is nothing to replay (no finished run).
  bool showStep(int step);
  // " · job 2 of 5" after the token count while a batch or a queue runs (empty: none).
  // "job 2 of 5" on the progress bar while a batch or a queue runs, kept current from the queue.
  void followQueue(const JobQueue* queue);
  void updateProgress();
  void hover(int cell);

  // The two splitters' sizes across sessions (window/splits).
  void loadSettings(const QSettings& s);
  void saveSettings(QSettings& s) const;

 Q_SIGNALS:
  void cellHovered(int cell);
  void cellClicked(int cell);

 private:
  // The cells a replay at `shown` committed tokens shows, for a run filled in any order (MAR's);
  // empty for a raster one (its first `shown` cells).
  std::vector<int64_t> shownCells(int shown) const;
  QWidget* buildProgressRow();
  void onFrame();
  void paintAll();

  RunState run_;
  QImage picture_;
  QElapsedTimer clock_;
  QTimer frame_timer_;
  int frame_count_ = 0;
  bool running_ = false;
  QString queue_text_;
  QProgressBar* progress_ = nullptr;
  QLabel* progress_text_ = nullptr;
  ImageView* image_ = nullptr;
  HeatmapPanel* heatmaps_ = nullptr;
  PlotPanel* plots_ = nullptr;
  QSplitter* top_split_ = nullptr;
  QSplitter* main_split_ = nullptr;
};

}  // namespace adtree::ui
