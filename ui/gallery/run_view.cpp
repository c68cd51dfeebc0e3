#include "ui/gallery/run_view.h"

#include <QCursor>
#include <QDataStream>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>

#include "ui/panels/heatmap_panel.h"
#include "ui/panels/plot_panel.h"
#include "ui/runs/job_queue.h"
#include "ui/views/formatting.h"
#include "ui/views/image_convert.h"
#include "ui/views/image_view.h"

namespace adtree::ui {

namespace {
// The image repaints at ~30 frames per second; the maps and plots (nine QCustomPlot replots, ~6 ms
// together) five times a second: live enough to watch, and the GUI thread stays under ~10% of a
// core, which on a 2-core machine is time the decoding thread does not lose (docs/GUI.md).
constexpr int kFrameMs = 33;
constexpr int kPlotEveryFrames = 6;
}  // namespace

RunView::RunView(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(6);
  v->addWidget(buildProgressRow());
  image_ = new ImageView(this);
  image_->setObjectName("imageView");
  image_->setPlaceholder(tr("Loading model…"));
  heatmaps_ = new HeatmapPanel(this);
  heatmaps_->setObjectName("heatmapPanel");
  plots_ = new PlotPanel(this);
  plots_->setObjectName("plotPanel");
  top_split_ = new QSplitter(Qt::Horizontal, this);
  top_split_->addWidget(image_);
  top_split_->addWidget(heatmaps_);
  top_split_->setStretchFactor(0, 2);
  top_split_->setStretchFactor(1, 3);
  top_split_->setChildrenCollapsible(false);
  main_split_ = new QSplitter(Qt::Vertical, this);
  main_split_->addWidget(top_split_);
  main_split_->addWidget(plots_);
  main_split_->setStretchFactor(0, 5);
  main_split_->setStretchFactor(1, 2);
  main_split_->setChildrenCollapsible(false);
  v->addWidget(main_split_, 1);
  // First start: image 40%, maps 60%; maps and plots 5:2 in height.
  top_split_->setSizes({400, 600});
  main_split_->setSizes({500, 200});

  frame_timer_.setInterval(kFrameMs);
  connect(&frame_timer_, &QTimer::timeout, this, &RunView::onFrame);
  connect(image_, &ImageView::cellHovered, this, &RunView::cellHovered);
  connect(heatmaps_, &HeatmapPanel::cellHovered, this, &RunView::cellHovered);
  connect(image_, &ImageView::cellClicked, this, &RunView::cellClicked);
  connect(heatmaps_, &HeatmapPanel::cellClicked, this, &RunView::cellClicked);
}

QWidget* RunView::buildProgressRow() {
  auto* row = new QWidget(this);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(8);
  progress_ = new QProgressBar(row);
  progress_->setObjectName("progressBar");
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("%v / %m tokens"));
  progress_->setTextVisible(true);
  progress_->setMinimumWidth(200);
  progress_->setMaximumHeight(20);
  progress_text_ = new QLabel(row);
  progress_text_->setObjectName("progressText");
  // Tabular digits: the numbers change 30 times a second and must not make the text jump.
  progress_text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  progress_text_->setToolTip(
      tr("τ (tau) = tokens committed per target-model forward: 1 for AR, "
         "the speed-up factor of speculative methods.\nSpeed and ETA use "
         "the last 0.25 s."));
  h->addWidget(progress_, 2);
  h->addWidget(progress_text_, 3);
  return row;
}

void RunView::setPlaceholder(const QString& text) {
  image_->setPlaceholder(text);
}

void RunView::showEmpty(const engine::ModelInfo& info, const MapRanges& ranges) {
  run_.showEmpty(int(info.grid_h), int(info.grid_w), ranges);
  image_->startRun(int(info.grid_h), int(info.grid_w), int(info.image_h), int(info.image_w));
  image_->setPlaceholder(
      tr("Type a prompt and press Generate (Ctrl+Return).\nThe image appears "
         "here token by token."));
  heatmaps_->refresh(run_);
  plots_->refresh(run_);
  progress_->setRange(0, int(info.grid_h * info.grid_w));
  progress_->setValue(0);
}

void RunView::start(const engine::JobStarted& s, const MapRanges& ranges) {
  running_ = true;
  picture_ = QImage();
  run_.reset(s, ranges);
  clock_.start();
  image_->startRun(int(s.grid_h), int(s.grid_w), int(s.image_h), int(s.image_w));
  image_->setRunning(true);
  heatmaps_->setHoverText({});
  progress_->setRange(0, int(s.total_tokens));
  progress_text_->setText(tr("starting…"));
  frame_count_ = 0;
  frame_timer_.start();
  // The maps and plots empty at once: their 5-per-second refresh would show the previous run's
  // grids for the first frames (a queue starts jobs back to back).
  heatmaps_->refresh(run_);
  plots_->refresh(run_);
  onFrame();
}

void RunView::addSteps(const std::vector<engine::JobStep>& steps) {
  run_.addSteps(steps);  // bookkeeping only; the frame timer paints
}

void RunView::preview(const engine::JobPreview& p) {
  if (!p.image.empty()) image_->setPreview(toQImage(p.image), int(p.valid_cells), p.cells);
}

void RunView::finish(const engine::JobFinished& f) {
  run_.finish(f);
  picture_ = toQImage(f.image);
  if (!picture_.isNull()) image_->setPreview(picture_, int(f.tokens.size()));
}

void RunView::end() {
  running_ = false;
  frame_timer_.stop();
  image_->setRunning(false);
  paintAll();
}

void RunView::paintAll() {
  image_->setCommitted(run_.committed(), run_.tokens(), run_.vectors());
  image_->refresh();
  heatmaps_->refresh(run_);
  plots_->refresh(run_);
  updateProgress();
}

void RunView::showRecord(const RunRecord& r, const MapRanges& ranges) {
  run_.restore(*r.stats, r.tokens, r.elapsedMs, ranges, r.vectors);
  picture_ = r.image;
  const int h = r.gridH(), w = r.gridW();
  image_->startRun(h, w, r.image.isNull() ? h * 8 : r.image.height(),
                   r.image.isNull() ? w * 8 : r.image.width());
  if (!r.image.isNull()) image_->setPreview(r.image, int(r.tokens.size()));
  progress_->setRange(0, std::max(1, run_.cells()));
  paintAll();
}

std::vector<int64_t> RunView::shownCells(int shown) const {
  if (run_.inOrder()) return {};
  const auto& order = run_.commitOrder();
  return std::vector<int64_t>(order.begin(), order.begin() + std::min(shown, int(order.size())));
}

bool RunView::showStep(int step) {
  // Only a finished (or restored) run can be replayed; a live one is still growing.
  if (step < 0 || run_.steps() == 0 || !run_.finished()) return false;
  run_.setViewStep(step);
  const int shown = run_.committed();
  if (!picture_.isNull()) image_->setPreview(picture_, shown, shownCells(shown));
  image_->setCommitted(shown, run_.tokens(), run_.vectors());
  // The step's first new cell is outlined, so the eye finds what this step added.
  // (Not at the end of the run: there the whole picture is the point.)
  const int first = run_.viewStep() >= 0 ? run_.stepFirstCell(step) : -1;
  image_->setHighlight(first < run_.cells() ? first : -1);
  heatmaps_->setHighlight(first < run_.cells() ? first : -1);
  image_->refresh();
  heatmaps_->refresh(run_);
  updateProgress();
  return true;
}

void RunView::followQueue(const JobQueue* queue) {
  const auto update = [this, queue] {
    queue_text_ = queue->total() > 1
                      ? tr(" · job %1 of %2").arg(std::max(1, queue->begun())).arg(queue->total())
                      : QString();
    progress_->setFormat(tr("%v / %m tokens") + queue_text_);
  };
  for (auto sig : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved}) {
    connect(queue, sig, this, update);
  }
  connect(queue, &QAbstractItemModel::modelReset, this, update);
}

void RunView::onFrame() {
  image_->setCommitted(run_.committed(), run_.tokens(), run_.vectors());
  image_->refresh();
  updateProgress();
  if (++frame_count_ % kPlotEveryFrames == 0) {
    heatmaps_->refresh(run_);
    plots_->refresh(run_);
  }
}

void RunView::updateProgress() {
  progress_->setValue(run_.committed());
  if (run_.viewStep() >= 0) {
    // Replaying: the numbers of the run so far, up to the chosen step.
    progress_text_->setText(tr("replay: step %1 of %2  ·  %3 tokens committed so far")
                                .arg(run_.viewStep())
                                .arg(run_.steps() - 1)
                                .arg(run_.committed()));
    return;
  }
  const double elapsed = running_ ? clock_.elapsed() / 1000.0 : run_.elapsedMs() / 1000.0;
  const QString eta_text =
      running_ ? tr("ETA %1").arg(formatSeconds(run_.etaSeconds()), 7)
               : (run_.committed() == run_.cells() && run_.cells() > 0 ? tr("done") : QString());
  progress_text_->setText(tr("step %1  τ %2  %3 tok/s  %4 elapsed  %5")
                              .arg(run_.steps(), 4)
                              .arg(run_.tau(), 4, 'f', 2)
                              .arg(run_.tokensPerSecond(), 5, 'f', 0)
                              .arg(formatSeconds(elapsed), 7)
                              .arg(eta_text));
}

void RunView::hover(int cell) {
  image_->setHighlight(cell);
  heatmaps_->setHighlight(cell);
  const QString text = run_.describeCell(cell);
  heatmaps_->setHoverText(text);
  if (cell >= 0 && !text.isEmpty()) {
    QToolTip::showText(QCursor::pos(), text);
  } else {
    QToolTip::hideText();
  }
}

void RunView::saveSettings(QSettings& settings) const {
  QByteArray out;
  QDataStream s(&out, QIODevice::WriteOnly);
  s << top_split_->saveState() << main_split_->saveState();
  settings.setValue("window/splits", out);
}

void RunView::loadSettings(const QSettings& settings) {
  const QByteArray state = settings.value("window/splits").toByteArray();
  if (state.isEmpty()) return;
  QDataStream s(state);
  QByteArray top, main;
  s >> top >> main;
  top_split_->restoreState(top);
  main_split_->restoreState(main);
}

}  // namespace adtree::ui
