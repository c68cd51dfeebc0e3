#include "ui/window/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QVBoxLayout>

#include "engine/engine.h"
#include "ui/gallery/gallery.h"
#include "ui/gallery/run_history.h"
#include "ui/gallery/run_library.h"
#include "ui/gallery/run_view.h"
#include "ui/panels/heatmap_panel.h"
#include "ui/panels/histogram_panel.h"
#include "ui/panels/history_panel.h"
#include "ui/panels/method_names.h"
#include "ui/panels/prompt_bar.h"
#include "ui/panels/queue_panel.h"
#include "ui/panels/replay_panel.h"
#include "ui/panels/settings_panel.h"
#include "ui/runs/job_queue.h"
#include "ui/runs/png_settings.h"
#include "ui/views/compare_window.h"
#include "ui/views/distribution_view.h"
#include "ui/views/image_convert.h"
#include "ui/views/image_view.h"
#include "ui/views/tree_view.h"
#include "ui/window/default_model.h"
#include "ui/window/device_menu.h"
#include "ui/window/engine_bridge.h"
#include "ui/window/error_dialog.h"
#include "ui/window/exports.h"
#include "ui/window/import_dialog.h"
#include "ui/window/main_actions.h"
#include "ui/window/model_status.h"
#include "ui/window/recent_models.h"
#include "ui/window/status_text.h"
#include "ui/window/text_encoder_menu.h"

namespace adtree::ui {

MainWindow::MainWindow(QWidget* parent)
    : MainWindow(engine::EngineOptions{}.preview_interval_ms, parent) {}

MainWindow::MainWindow(double previewIntervalMs, QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ADT-Tree Studio"));
  setAcceptDrops(true);
  engine::EngineOptions opts;
  opts.previews = previewIntervalMs > 0;
  opts.preview_interval_ms = previewIntervalMs;
  bridge_ = new EngineBridge(opts, this);
  library_ = new RunLibrary(this);
  queue_ = new JobQueue(this);
  buildUi();
  const auto status = [this](const QString& m, int ms) { this->status(m, ms); };
  exports_ = std::make_unique<Exports>(
      this,
      Exports::Source{[this] { return shownRecord(); }, view_, docks_.replay,
                      [this] { return actions_->pngSettingsOn(); }},
      status);
  actions_ = new MainActions({this, this, exports_.get(), view_, docks_.replay, bar_,
                              docks_.settings, library_, docks_.toggleActions(), status});
  connectUi();
  connectHistory();
  connectBridge();
  connectLibrary();
  loadSettings();
  setBusyUi();
}

const RunState& MainWindow::run() const {
  return view_->run();
}
RunHistory* MainWindow::history() const {
  return library_->history();
}
Gallery* MainWindow::gallery() const {
  return library_->gallery();
}

MainWindow::~MainWindow() {
  // Stop the worker before the widgets its (queued) events would reach go away.
  bridge_->shutdown();
}

// ---- layout -----------------------------------------------------------------------------------

void MainWindow::buildUi() {
  auto* central = new QWidget(this);
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(8, 6, 8, 4);
  v->setSpacing(6);

  model_status_ = new ModelStatus(central, statusBar());
  v->addWidget(model_status_->banner());
  bar_ = new PromptBar(central);
  v->addWidget(bar_);
  view_ = new RunView(central);
  v->addWidget(view_, 1);
  setCentralWidget(central);
  docks_ = MainDocks::build(this, library_->history(), queue_);
}

void MainWindow::connectUi() {
  connect(bar_, &PromptBar::generateRequested, this, &MainWindow::generate);
  connect(bar_, &PromptBar::cancelRequested, this, &MainWindow::cancel);
  connect(bar_, &PromptBar::methodChanged, this, &MainWindow::onMethodChanged);
  connect(view_, &RunView::cellHovered, view_, &RunView::hover);
  connect(view_, &RunView::cellClicked, this, &MainWindow::inspectCell);
  connect(docks_.replay, &ReplayPanel::stepChanged, this, &MainWindow::onReplayStep);
  connect(docks_.replay->treeView(), &TreeView::cellActivated, this, &MainWindow::inspectCell);
  connect(docks_.queue, &QueuePanel::cancelRunningRequested, this, &MainWindow::cancel);
  view_->followQueue(queue_);
}

// The History panel's commands on a picture.
void MainWindow::connectHistory() {
  connect(docks_.history, &HistoryPanel::runSelected, this, &MainWindow::showHistoryRun);
  connect(docks_.history, &HistoryPanel::deleteRequested, this, &MainWindow::deleteRuns);
  connect(docks_.history, &HistoryPanel::revealRequested, this, [this](int id) {
    if (!library_->reveal(id))
      status(tr("This run is not in the gallery (the gallery is off, or its save failed)."), 5000);
  });
  connect(docks_.history, &HistoryPanel::copyRequested, this, [this](int id) {
    if (const RunRecord* r = history()->find(id); r && !r->image.isNull()) {
      copyToClipboard(r->image);
      status(tr("Copied the picture of run #%1 to the clipboard").arg(id), 3000);
    }
  });
  connect(docks_.history, &HistoryPanel::compareRequested, this, [this](int a, int b) {
    QString error;
    const auto pair = library_->loadPair(a, b, &error);
    if (!pair) return;
    compareWindow()->showRecords(*pair->older, *pair->newer);
    compare_->show();
    compare_->raise();
  });
}

void MainWindow::connectBridge() {
  connect(bridge_, &EngineBridge::loadProgress, this,
          [this](const QString&, const QString& stage, double) { status(stage + "…"); });
  connect(bridge_, &EngineBridge::modelLoaded, this, &MainWindow::onModelLoaded);
  connect(bridge_, &EngineBridge::loadFailed, this, &MainWindow::onLoadFailed);
  connect(bridge_, &EngineBridge::tokenColorsArrived, this, &MainWindow::onTokenColors);
  connect(bridge_, &EngineBridge::jobStarted, this, &MainWindow::onJobStarted);
  connect(bridge_, &EngineBridge::stepsArrived, this, &MainWindow::onSteps);
  connect(bridge_, &EngineBridge::previewArrived, this, &MainWindow::onPreview);
  connect(bridge_, &EngineBridge::jobFinished, this, &MainWindow::onFinished);
  connect(bridge_, &EngineBridge::jobFailed, this, &MainWindow::onFailed);
  connect(bridge_, &EngineBridge::jobCancelled, this, &MainWindow::onCancelled);
}

void MainWindow::connectLibrary() {
  connect(library_, &RunLibrary::removed, docks_.histograms, &HistogramPanel::removeRun);
  connect(library_, &RunLibrary::saved, this, &MainWindow::gallerySaved);
  connect(library_, &RunLibrary::noteChanged, docks_.history, &HistoryPanel::setGalleryNote);
  connect(library_, &RunLibrary::capped, this, [this](int count, int limitMb) {
    status(tr("The gallery is over its %1 MB limit: removed the %2 oldest picture(s).")
               .arg(limitMb)
               .arg(count),
           10000);
  });
  connect(library_, &RunLibrary::saveFailed, this,
          [this](int id, const QString& dir, const QString& message) {
            showError(this, tr("Not saved in the gallery"),
                      tr("Run #%1 could not be saved in the gallery %2; it stays in this "
                         "session's history (File ▸ Save Run keeps it).")
                          .arg(id)
                          .arg(dir.toHtmlEscaped()),
                      message);
          });
}

void MainWindow::setGalleryDir(const QString& dir, bool remember) {
  library_->setGalleryDir(dir, remember);
}

// ---- settings ---------------------------------------------------------------------------------

void MainWindow::loadSettings() {
  QSettings s;
  // First start: a size that shows the image, the maps and the plots together.
  if (!restoreGeometry(s.value("window/geometry").toByteArray())) resize(1280, 800);
  first_layout_ = !restoreState(s.value("window/state").toByteArray());
  view_->loadSettings(s);
  bar_->loadSettings(s);
  docks_.settings->loadSettings(s);
  library_->loadSettings();
  actions_->loadSettings(s);
  onMethodChanged();
}

void MainWindow::saveSettings() const {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  view_->saveSettings(s);
  bar_->saveSettings(s);
  docks_.settings->saveSettings(s);
  actions_->saveSettings(s);
  library_->saveSettings();
}

// ---- model ------------------------------------------------------------------------------------

void MainWindow::openDefaultModel() {
  const auto d = findDefaultModel();
  status(tr("Opening %1…").arg(d.source));
  openModel(d.dir, d.createRandom);
}

void MainWindow::openModel(const QString& dir, const QString& createRandom) {
  if (current_job_) cancel();  // a new model makes the running picture meaningless
  queue_->clearPending();      // and the waiting ones were meant for the old model
  loading_dir_ = dir;
  if (!model_) view_->setPlaceholder(tr("Loading model…"));
  status(tr("Loading %1…").arg(QDir::toNativeSeparators(dir)));
  bridge_->loadModel(dir, actions_->devices()->device(), actions_->devices()->dtype(), createRandom,
                     actions_->textEncoder()->dir());
  setBusyUi();
}

// A large tokenizer's colours, decoded while the engine was idle after the load: tokens are
// painted in them from now on instead of hatched until the preview.
void MainWindow::onTokenColors(const QString& dir, const std::vector<uint8_t>& colors) {
  if (!model_ || QString::fromStdString(model_->dir) != dir) return;  // another model since
  model_->token_colors = colors;
  view_->image()->setTokenColors(colors);
  if (compare_) compare_->setTokenColors(colors);
  status(tr("Token colours ready: each token is painted in its code's colour as it comes"), 5000);
}

void MainWindow::onModelLoaded(const engine::ModelLoaded& loaded) {
  const auto& info = loaded.info;
  model_ = info;
  loading_dir_.clear();
  bar_->setModel(info);
  view_->image()->setTokenColors(info.token_colors);
  view_->image()->setVectorColours(info.vector_colours);
  view_->heatmaps()->setVectorTokens(info.token_kind == "vectors");
  docks_.inspector->setVectorTokens(info.token_kind == "vectors");
  docks_.settings->setLoadedModel(info);
  const QString dir = QString::fromStdString(info.dir);
  model_status_->show(info);
  if (!isRunning()) {
    // Colour scales already span what the current settings can produce, not a placeholder 0..1.
    // Invalid settings: the scales stay at their defaults until the next run says otherwise.
    const auto req = docks_.settings->validRequest(bar_->method(), decode::Acceptance::Lossless);
    view_->showEmpty(info, req ? ranges_for(*req) : MapRanges{});
  }
  QString loaded_text =
      tr("Loaded %1 in %2 ms").arg(QDir::toNativeSeparators(dir)).arg(int(loaded.load_ms));
  if (info.packed_from_cache) loaded_text += tr(" (packed weights from the cache)");
  if (!info.cache_warning.empty())
    loaded_text += " — " + QString::fromStdString(info.cache_warning);
  status(loaded_text, 8000);
  // Every model a user opened is worth a shortcut, except the automatic random fallback.
  if (QDir(dir) != QDir(randomModelDir())) actions_->recent()->add(dir);
  setWindowTitle(tr("ADT-Tree Studio — %1").arg(QString::fromStdString(info.name)));
  if (compare_) compare_->setModel(info);
  setBusyUi();
  Q_EMIT modelReady();
}

void MainWindow::onLoadFailed(const QString& dir, const QString& message) {
  loading_dir_.clear();
  if (model_) {
    // The menus show what is loaded, not the device or precision that just failed.
    actions_->devices()->showLoaded(QString::fromStdString(model_->device).section(':', 0, 0),
                                    QString::fromStdString(model_->dtype));
  }
  setBusyUi();
  QString keep = model_ ? tr("Still using %1.").arg(QString::fromStdString(model_->name))
                        : tr("No model is loaded: open one with File ▸ Open Model.");
  if (!model_) view_->setPlaceholder(tr("No model loaded.\nFile ▸ Open Model… (Ctrl+O)"));
  status(tr("Could not open %1").arg(QDir::toNativeSeparators(dir)), 10000);
  showError(this, tr("Could not open the model"),
            tr("The directory %1 could not be opened as a model.")
                    .arg("<b>" + QDir::toNativeSeparators(dir).toHtmlEscaped() + "</b>") +
                "<br><br>" + keep,
            message);
  Q_EMIT modelLoadFailed(message);
}

// ---- running ----------------------------------------------------------------------------------

void MainWindow::onMethodChanged() {
  docks_.settings->setMethod(bar_->method(), bar_->acceptance());
}

void MainWindow::setBusyUi() {
  const bool can_generate = model_.has_value() && loading_dir_.isEmpty();
  bar_->setBusy(can_generate, isRunning());
  actions_->setState({can_generate, isRunning(), shownRecord() != nullptr,
                      !view_->picture().isNull(), run().hasTraces()});
}

void MainWindow::generate() {
  if (!model_ || !loading_dir_.isEmpty()) return;
  QueuedJob job;
  job.prompt = bar_->promptText();
  if (job.prompt.isEmpty()) {
    status(tr("Type a prompt first."), 5000);
    bar_->focusPrompt();
    return;
  }
  job.method = bar_->method();
  job.seed = bar_->nextSeed();
  try {
    job.request = docks_.settings->request(job.method, bar_->acceptance(), job.seed);
  } catch (const std::exception& e) {
    showError(this, tr("Invalid settings"), tr("The settings do not form a valid request."),
              e.what());
    return;
  }
  job.request.trace.enabled = actions_->traceOn();
  const int count = bar_->count();
  queue_->enqueueBatch(job, count);
  if (isRunning()) {
    status(tr("Queued %n job(s); %1 waiting.", nullptr, count).arg(queue_->pending()), 5000);
  }
  saveSettings();
  startNext();
}

void MainWindow::startNext() {
  if (isRunning() || !model_ || !loading_dir_.isEmpty()) return;
  const auto job = queue_->startNext();
  if (!job) return;
  pending_ranges_ = ranges_for(job->request);
  current_job_ = bridge_->submit(job->prompt, job->request);
  status(tr("Generating “%1” with %2, seed %3…")
             .arg(job->prompt, method_label(job->method))
             .arg(job->seed));
  setBusyUi();
}

void MainWindow::cancel() {
  if (!current_job_) return;
  bridge_->cancel(current_job_);
  status(tr("Cancelling…"));
}

void MainWindow::onJobStarted(const engine::JobStarted& s) {
  if (s.job != current_job_) return;
  shown_id_ = 0;
  inspected_cell_ = -1;
  docks_.inspector->clear();
  docks_.replay->clearRun(tr("Replay is available when the run has finished."));
  view_->start(s, pending_ranges_);
}

void MainWindow::onSteps(const std::vector<engine::JobStep>& steps) {
  view_->addSteps(steps);
}

void MainWindow::onPreview(const engine::JobPreview& p) {
  if (p.job == current_job_) view_->preview(p);
}

void MainWindow::onFinished(const engine::JobFinished& f) {
  if (f.job != current_job_) return;
  view_->finish(f);
  last_job_ms_ = f.elapsed_ms;
  last_decode_cpu_ms_ = f.decode_cpu_ms;
  std::optional<decode::RunSettings> settings;  // what ran, for the status line
  try {
    RunRecord r = recordFromFinished(f);
    settings = r.stats->settings;
    shown_id_ = library_->addFinished(r);
    r.id = shown_id_;
    docks_.history->setCurrent(r.id);  // marked as the one on screen, without re-showing it
    docks_.histograms->setRun(r.id, histogramOf(r));
  } catch (const std::exception& e) {
    // The run is on screen either way; only its history entry and replay are missing.
    status(tr("The run's statistics could not be read back: %1").arg(e.what()), 10000);
  }
  docks_.replay->setRun(run());
  onReplayStep(docks_.replay->step());
  endRun("finished", finishedStatus(f, settings ? &*settings : nullptr));
  Q_EMIT generationFinished();
}

void MainWindow::onFailed(engine::JobId job, const QString& message) {
  if (job != current_job_) return;
  // The rest of its batch has the same prompt and settings: it would fail the same way, each with
  // its own dialog. It leaves the queue; other batches still run.
  const int dropped = queue_->cancelRestOfRunningBatch();
  endRun("failed", tr("Generation failed."));
  showError(this, tr("Generation failed"),
            dropped > 0 ? tr("The image could not be generated; the %n other picture(s) of its "
                             "batch were taken out of the queue.",
                             nullptr, dropped)
                        : tr("The image could not be generated."),
            message);
}

void MainWindow::onCancelled(engine::JobId job, qint64 tokens) {
  if (job != current_job_) return;
  endRun("cancelled", tr("Cancelled after %1 tokens.").arg(tokens));
}

void MainWindow::endRun(const QString& how, const QString& message) {
  current_job_ = 0;
  queue_->finishRunning();
  view_->end();
  status(message, how == "finished" ? 0 : 10000);
  setBusyUi();
  Q_EMIT generationEnded(how);
  // The next waiting job, from the event loop: listeners of generationEnded see this run first.
  QTimer::singleShot(0, this, &MainWindow::startNext);
}

void MainWindow::status(const QString& message, int timeoutMs) {
  statusBar()->showMessage(message, timeoutMs);
}

// ---- history, replay, inspector ---------------------------------------------------------------

const RunRecord* MainWindow::shownRecord() const {
  const RunRecord* r = history()->find(shown_id_);
  return r && r->stats ? r : nullptr;
}

void MainWindow::showHistoryRun(int id) {
  if (isRunning()) {
    status(tr("A run is in progress: earlier runs can be shown when it ends."), 5000);
    return;
  }
  QString error;
  const RunRecord* r = library_->load(id, &error);
  if (!r) {
    showError(this, tr("Could not open the picture"),
              tr("The gallery entry could not be read back."), error);
    return;
  }
  showRecord(*r);
}

void MainWindow::showRecord(const RunRecord& r) {
  shown_id_ = r.id;
  view_->showRecord(r, ranges_for(r.stats->settings.request));
  last_job_ms_ = r.elapsedMs;
  inspected_cell_ = -1;
  docks_.inspector->clear();
  docks_.replay->setRun(run());
  onReplayStep(docks_.replay->step());
  docks_.history->setCurrent(r.id);
  docks_.histograms->setRun(r.id, histogramOf(r));
  status(tr("Showing run #%1: “%2”, %3").arg(r.id).arg(r.prompt, r.summaryLine()), 8000);
  setBusyUi();
}

void MainWindow::deleteRuns(const QList<int>& ids) {
  QList<int> gone = ids;
  if (isRunning()) gone.removeAll(shown_id_);
  QString error;
  const int files = library_->remove(gone, &error);
  if (!error.isEmpty()) {
    showError(this, tr("Could not delete"), tr("The picture's files could not be deleted."), error);
  }
  if (!history()->find(shown_id_)) shown_id_ = 0;
  status(
      tr("Deleted %n run(s) (%1 from the gallery folder).", nullptr, int(gone.size())).arg(files),
      5000);
  setBusyUi();
}

void MainWindow::onReplayStep(int step) {
  if (!view_->showStep(step)) return;
  const RunRecord* rec = shownRecord();
  const decode::StepRecord* sr =
      rec && step < int(rec->stats->steps.size()) ? &rec->stats->steps[size_t(step)] : nullptr;
  docks_.replay->showTrace(run().trace(step), sr);
  setBusyUi();
}

void MainWindow::inspectCell(int cell) {
  if (cell < 0 || cell >= run().cells()) return;
  inspected_cell_ = cell;
  docks_.raise("inspector");
  if (const QString why = docks_.inspector->showCell(run(), cell); !why.isEmpty())
    status(why, 6000);
}

void MainWindow::raiseDock(const QString& name) {
  docks_.raise(name);
}

// ---- files: runs, drops, exports --------------------------------------------------------------

bool MainWindow::openRunFile(const QString& path) {
  if (isRunning()) {
    showError(this, tr("A run is in progress"),
              tr("Wait for the run to finish (or cancel it) first."));
    return false;
  }
  QString error;
  auto r = loadRunFile(path, &error);
  if (!r) {
    showError(this, tr("Could not open the run"),
              tr("%1 could not be opened as a run.").arg(path.toHtmlEscaped()), error);
    return false;
  }
  if (r->image.isNull()) {
    status(tr("The file has no picture (a CLI statistics file): tokens are shown in their "
              "codes' colours."),
           8000);
  }
  const int id = library_->addOpened(*r);
  showRecord(*history()->find(id));
  return true;
}

bool MainWindow::copyImage() {
  const QImage& pic = view_->picture();
  if (pic.isNull()) return false;
  copyToClipboard(pic);
  status(tr("Copied the picture to the clipboard"), 3000);
  return true;
}

// Drag and drop: a model directory, a checkpoint to import, a run file or an exported PNG from the
// file manager.
void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (urls.size() == 1 && urls.first().isLocalFile()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (urls.size() != 1 || !urls.first().isLocalFile()) return;
  e->acceptProposedAction();
  openDropped(urls.first().toLocalFile());
}

bool MainWindow::openDropped(const QString& path) {
  const QFileInfo fi(path);
  if (fi.isDir()) {
    openModel(fi.absoluteFilePath());
    return true;
  }
  if (fi.isFile() && QStringList{"pt", "pth", "bin"}.contains(fi.suffix().toLower())) {
    importCheckpoint(fi.absoluteFilePath());
    return true;
  }
  if (fi.isFile() && fi.suffix().compare("png", Qt::CaseInsensitive) == 0) {
    return restoreFromPng(fi.absoluteFilePath());
  }
  if (fi.isFile()) return openRunFile(fi.absoluteFilePath());
  showError(this, tr("Nothing to open"),
            tr("%1 is neither a model directory nor a run file.").arg(path.toHtmlEscaped()));
  return false;
}

void MainWindow::importCheckpoint(const QString& path) {
  QString file = path;
  if (file.isEmpty()) {
    file = QFileDialog::getOpenFileName(
        this, tr("Import a checkpoint"), QDir::homePath(),
        tr("PyTorch checkpoints (*.pt *.pth *.bin *.safetensors);;All files (*)"));
    if (file.isEmpty()) return;
  }
  auto* dialog = new ImportDialog(file, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &ImportDialog::imported, this, [this](const QString& dir) {
    actions_->recentImports()->add(dir);
    openModel(dir);
  });
  dialog->open();
}

bool MainWindow::restoreFromPng(const QString& path) {
  const PngRestore p = readPngRestore(path);
  if (!p.ok()) {
    showError(this, p.errorTitle, p.error, p.errorDetail);
    return false;
  }
  bar_->setMethod(p.request.method.method);
  bar_->setAcceptance(p.request.method.acceptance);
  docks_.settings->setRequest(p.request);
  bar_->setPromptText(p.prompt);
  bar_->setFixedSeed(p.request.seed);
  // A picture of the gallery brings its whole run back too: picture, maps and replay.
  const QString base = path.chopped(4);
  if (const int id = history()->idOfGalleryBase(QFileInfo(base).absoluteFilePath());
      id && !isRunning()) {
    showHistoryRun(id);
  }
  QString note;
  if (model_ && !p.modelHash.empty() && !model_->hash.empty() && p.modelHash != model_->hash) {
    note = tr(" It was made with other weights than the loaded model's: the picture will differ.");
  }
  status(tr("Restored the settings of %1.%2").arg(QFileInfo(path).fileName(), note),
         note.isEmpty() ? 5000 : 15000);
  return true;
}

// ---- compare ----------------------------------------------------------------------------------

CompareWindow* MainWindow::compareWindow() {
  if (!compare_) {
    compare_ = new CompareWindow(bridge_, this);
    if (model_) compare_->setModel(*model_);
    // Invalid settings: the method alone, with its defaults.
    const auto req = docks_.settings->validRequest(bar_->method(), bar_->acceptance());
    compare_->startAgainstAr(bar_->method(), bar_->acceptance(), req ? &*req : nullptr);
  }
  compare_->setPrompt(bar_->promptText());
  compare_->setSeed(bar_->seed());
  return compare_;
}

void MainWindow::showCompareWindow() {
  auto* c = compareWindow();
  c->show();
  c->raise();
  c->activateWindow();
}

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (!first_layout_) return;
  first_layout_ = false;
  docks_.sizeForFirstShow(this);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  saveSettings();
  // Cancels a running job and joins the worker: at most one decoding step.
  bridge_->shutdown();
  // A finished picture still being written reaches the gallery before the window goes.
  gallery()->waitForIdle();
  e->accept();
}

}  // namespace adtree::ui
