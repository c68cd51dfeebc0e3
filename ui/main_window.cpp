#include "ui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QCursor>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSaveFile>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QToolTip>
#include <QVBoxLayout>

#include "decode/method.h"
#include "engine/engine.h"
#include "ui/compare_window.h"
#include "ui/default_model.h"
#include "ui/distribution_view.h"
#include "ui/engine_bridge.h"
#include "ui/heatmap_panel.h"
#include "ui/histogram_panel.h"
#include "ui/history_panel.h"
#include "ui/image_view.h"
#include "ui/method_names.h"
#include "ui/plot_panel.h"
#include "ui/presets.h"
#include "ui/prompt_edit.h"
#include "ui/replay_panel.h"
#include "ui/settings_panel.h"
#include "ui/tree_view.h"

namespace adtree::ui {

namespace {
// The PNG text key of the generation settings (the CLI's imaging::kSettingsKeyword).
const QString kPngSettingsKey = QStringLiteral("adtree-settings");
}  // namespace

namespace {

// The image repaints at ~30 frames per second; the maps and plots (nine QCustomPlot replots, ~6 ms
// together) five times a second: live enough to watch, and the GUI thread stays under ~10% of a
// core, which on a 2-core machine is time the decoding thread does not lose (docs/GUI.md).
constexpr int kFrameMs = 33;
constexpr int kPlotEveryFrames = 6;
constexpr int kMaxRecent = 8;

QString format_seconds(double s) {
  if (s < 0) return QStringLiteral("–");
  if (s < 60) return QString::number(s, 'f', s < 10 ? 2 : 1) + " s";
  return QStringLiteral("%1 min %2 s").arg(int(s) / 60).arg(int(s) % 60);
}

QString format_params(qint64 n) {
  if (n >= 1000000) return QString::number(double(n) / 1e6, 'f', 1) + "M";
  if (n >= 1000) return QString::number(double(n) / 1e3, 'f', 0) + "k";
  return QString::number(n);
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : MainWindow(engine::EngineOptions{}.preview_interval_ms, parent) {}

MainWindow::MainWindow(double previewIntervalMs, QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ADT-Tree Studio"));
  setAcceptDrops(true);
  engine::EngineOptions opts;
  opts.previews = previewIntervalMs > 0;
  opts.preview_interval_ms = previewIntervalMs;
  bridge_ = new EngineBridge(opts, this);
  buildUi();
  createActions();
  connectBridge();
  loadSettings();
  frame_timer_.setInterval(kFrameMs);
  connect(&frame_timer_, &QTimer::timeout, this, &MainWindow::onFrame);
  setBusyUi();
}

MainWindow::~MainWindow() {
  // Stop the worker before the widgets its (queued) events would reach go away.
  bridge_->shutdown();
}

void MainWindow::buildUi() {
  auto* central = new QWidget(this);
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(8, 6, 8, 4);
  v->setSpacing(6);

  banner_ = new QLabel(central);
  banner_->setObjectName("randomModelBanner");
  banner_->setWordWrap(true);
  banner_->setTextFormat(Qt::RichText);
  banner_->setStyleSheet(
      "QLabel#randomModelBanner { background: #fff4ce; color: #5c4400; "
      "border: 1px solid #e0c060; border-radius: 4px; padding: 5px 8px; }");
  banner_->setVisible(false);
  v->addWidget(banner_);

  // Row 1: the prompt and the two big buttons.
  auto* row1 = new QHBoxLayout;
  row1->setSpacing(6);
  prompt_ = new PromptEdit(central);
  prompt_->setPlaceholderText(
      tr("Describe the image, e.g. \"red apple noto\" (words from the model's "
         "vocabulary; Tab/arrows pick a completion)"));
  prompt_->setToolTip(
      tr("The prompt: words the model knows (completion lists them as you type) "
         "or, for class models, one class name.\nReturn or Ctrl+Return generates."));
  QFont pf = prompt_->font();
  pf.setPointSizeF(pf.pointSizeF() * 1.15);
  prompt_->setFont(pf);
  prompt_->setMinimumHeight(30);
  generate_button_ = new QPushButton(tr("Generate"), central);
  generate_button_->setObjectName("generateButton");
  generate_button_->setDefault(true);
  generate_button_->setMinimumHeight(30);
  generate_button_->setMinimumWidth(110);
  generate_button_->setToolTip(tr("Generate an image from the prompt (Ctrl+Return)"));
  generate_button_->setStyleSheet(
      "QPushButton#generateButton { background: #2563eb; color: white; font-weight: bold; "
      "border-radius: 4px; padding: 4px 14px; }"
      "QPushButton#generateButton:hover { background: #1d4ed8; }"
      "QPushButton#generateButton:disabled { background: #93a4c3; color: #eef; }");
  cancel_button_ = new QPushButton(tr("Cancel"), central);
  cancel_button_->setMinimumHeight(30);
  cancel_button_->setToolTip(tr("Stop the running generation (Esc); it stops within one step"));
  // Models prompted with a caption-embedding file (converted LlamaGen t2i) get a file picker.
  prompt_file_button_ = new QPushButton(tr("Embedding…"), central);
  prompt_file_button_->setObjectName("promptFileButton");
  prompt_file_button_->setMinimumHeight(30);
  prompt_file_button_->setToolTip(
      tr("Choose a caption-embedding file (.safetensors from "
         "tools/t5_embed.py) as the prompt"));
  prompt_file_button_->setVisible(false);
  connect(prompt_file_button_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Choose a caption embedding"), QDir::homePath(),
                                     tr("Caption embeddings (*.safetensors);;All files (*)"));
    if (!path.isEmpty()) prompt_->setText(path);
  });
  row1->addWidget(prompt_, 1);
  row1->addWidget(prompt_file_button_);
  row1->addWidget(generate_button_);
  row1->addWidget(cancel_button_);
  v->addLayout(row1);

  // Row 2: how to decode, and the seed.
  auto* row2 = new QHBoxLayout;
  row2->setSpacing(6);
  auto* method_label_w = new QLabel(tr("Method"), central);
  method_ = new QComboBox(central);
  method_->setObjectName("methodBox");
  method_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  for (const auto& m : decode::method_table()) {
    const QString key = QString::fromLatin1(m.key);
    method_->addItem(method_label(key), key);
    method_->setItemData(method_->count() - 1, method_help(key), Qt::ToolTipRole);
  }
  method_->setToolTip(
      tr("Decoding method. All lossless methods draw from the same distribution "
         "as AR; they differ in speed.\nTree methods need the model's draft head "
         "(drafter.safetensors)."));
  method_label_w->setBuddy(method_);
  lantern_ = new QCheckBox(tr("Relaxed acceptance (LANTERN)"), central);
  lantern_->setToolTip(
      tr("Accept a draft token when it is close in the VQ codebook to what the "
         "model would pick (LANTERN).\nFaster with draft trees, but lossy: the "
         "image differs slightly from plain sampling.\nOnly for draft-tree "
         "methods; settings in the LANTERN section."));
  auto* seed_label = new QLabel(tr("Seed"), central);
  seed_ = new QSpinBox(central);
  seed_->setRange(0, std::numeric_limits<int>::max());
  seed_->setToolTip(tr("Random seed: the same seed, settings and device give the same image."));
  seed_->setMinimumWidth(110);
  seed_label->setBuddy(seed_);
  random_seed_ = new QCheckBox(tr("random"), central);
  random_seed_->setToolTip(
      tr("Draw a new seed for every generation (it is shown in the seed box, "
         "so a good image can be reproduced)."));
  row2->addWidget(method_label_w);
  row2->addWidget(method_);
  row2->addWidget(lantern_);
  row2->addSpacing(16);
  row2->addWidget(seed_label);
  row2->addWidget(seed_);
  row2->addWidget(random_seed_);
  row2->addStretch(1);
  v->addLayout(row2);

  // Row 3: progress.
  auto* row3 = new QHBoxLayout;
  row3->setSpacing(8);
  progress_ = new QProgressBar(central);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("%v / %m tokens"));
  progress_->setTextVisible(true);
  progress_->setMinimumWidth(200);
  progress_->setMaximumHeight(20);
  progress_text_ = new QLabel(central);
  progress_text_->setObjectName("progressText");
  // Tabular digits: the numbers change 30 times a second and must not make the text jump.
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  progress_text_->setFont(mono);
  progress_text_->setToolTip(
      tr("τ (tau) = tokens committed per target-model forward: 1 for AR, "
         "the speed-up factor of speculative methods.\nSpeed and ETA use "
         "the last 0.25 s."));
  row3->addWidget(progress_, 2);
  row3->addWidget(progress_text_, 3);
  v->addLayout(row3);

  image_ = new ImageView(central);
  image_->setPlaceholder(tr("Loading model…"));
  heatmaps_ = new HeatmapPanel(central);
  plots_ = new PlotPanel(central);
  top_split_ = new QSplitter(Qt::Horizontal, central);
  top_split_->addWidget(image_);
  top_split_->addWidget(heatmaps_);
  top_split_->setStretchFactor(0, 2);
  top_split_->setStretchFactor(1, 3);
  top_split_->setChildrenCollapsible(false);
  main_split_ = new QSplitter(Qt::Vertical, central);
  main_split_->addWidget(top_split_);
  main_split_->addWidget(plots_);
  main_split_->setStretchFactor(0, 5);
  main_split_->setStretchFactor(1, 2);
  main_split_->setChildrenCollapsible(false);
  v->addWidget(main_split_, 1);
  setCentralWidget(central);

  settings_ = new SettingsPanel;
  auto* scroll = new QScrollArea;
  scroll->setWidget(settings_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  settings_dock_ = new QDockWidget(tr("Settings"), this);
  settings_dock_->setObjectName("settingsDock");
  settings_dock_->setWidget(scroll);
  settings_dock_->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable |
                              QDockWidget::DockWidgetFloatable);
  // Wide enough for every label and field without a horizontal scroll bar.
  scroll->setMinimumWidth(settings_->sizeHint().width() +
                          scroll->verticalScrollBar()->sizeHint().width() + 4);
  addDockWidget(Qt::LeftDockWidgetArea, settings_dock_);

  // The teaching and research views (GUI.md "Beyond a single run"): docks, so a class can show
  // just the replay and the tree, and a researcher can float the inspector next to the maps.
  // All under the maps: the replay strip, and beside it the inspector, histograms and history as
  // tabs, so the image and maps keep the window's full width.
  replay_ = new ReplayPanel;
  replay_dock_ =
      addDock(tr("Replay and draft tree"), "replayDock", replay_, Qt::BottomDockWidgetArea);
  inspector_ = new DistributionView;
  inspector_dock_ =
      addDock(tr("Token distribution"), "inspectorDock", inspector_, Qt::BottomDockWidgetArea);
  splitDockWidget(replay_dock_, inspector_dock_, Qt::Horizontal);
  histograms_ = new HistogramPanel;
  histogram_dock_ =
      addDock(tr("Acceptance histograms"), "histogramDock", histograms_, Qt::BottomDockWidgetArea);
  history_panel_ = new HistoryPanel;
  history_dock_ = addDock(tr("History"), "historyDock", history_panel_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(inspector_dock_, histogram_dock_);
  tabifyDockWidget(histogram_dock_, history_dock_);
  inspector_dock_->raise();

  model_label_ = new QLabel(this);
  device_label_ = new QLabel(this);
  statusBar()->addPermanentWidget(model_label_);
  statusBar()->addPermanentWidget(device_label_);

  connect(prompt_, &PromptEdit::submitted, this, &MainWindow::generate);
  connect(generate_button_, &QPushButton::clicked, this, &MainWindow::generate);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel);
  connect(method_, &QComboBox::currentIndexChanged, this, &MainWindow::onMethodChanged);
  connect(lantern_, &QCheckBox::toggled, this, &MainWindow::onMethodChanged);
  connect(image_, &ImageView::cellHovered, this, &MainWindow::onCellHovered);
  connect(heatmaps_, &HeatmapPanel::cellHovered, this, &MainWindow::onCellHovered);
  connect(image_, &ImageView::cellClicked, this, &MainWindow::inspectCell);
  connect(heatmaps_, &HeatmapPanel::cellClicked, this, &MainWindow::inspectCell);
  connect(replay_, &ReplayPanel::stepChanged, this, &MainWindow::onReplayStep);
  connect(replay_->treeView(), &TreeView::cellActivated, this, &MainWindow::inspectCell);
  connect(history_panel_, &HistoryPanel::runSelected, this, &MainWindow::showHistoryRun);
  connect(history_panel_, &HistoryPanel::compareRequested, this, [this](int a, int b) {
    const RunRecord *ra = nullptr, *rb = nullptr;
    for (const auto& r : history_) {
      if (r.id == a) ra = &r;
      if (r.id == b) rb = &r;
    }
    if (!ra || !rb) return;
    // Older run on the left: "B over A" then reads as "the newer configuration over the older".
    if (ra->id > rb->id) std::swap(ra, rb);
    compareWindow()->showRecords(*ra, *rb);
    compare_->show();
    compare_->raise();
  });
}

QDockWidget* MainWindow::addDock(const QString& title, const QString& name, QWidget* w,
                                 Qt::DockWidgetArea area) {
  auto* d = new QDockWidget(title, this);
  d->setObjectName(name);
  d->setWidget(w);
  d->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable |
                 QDockWidget::DockWidgetFloatable);
  addDockWidget(area, d);
  return d;
}

void MainWindow::createActions() {
  auto* file = menuBar()->addMenu(tr("&File"));
  act_open_ = file->addAction(tr("&Open Model…"), this, [this] {
    const QString start =
        model_ ? QFileInfo(QString::fromStdString(model_->dir)).path() : QDir::homePath();
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Open a model directory"), start);
    if (!dir.isEmpty()) openModel(dir);
  });
  act_open_->setShortcut(QKeySequence::Open);
  act_open_->setToolTip(tr("Open a model directory (model.json, gpt/vq.safetensors, text.json)"));
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  file->addAction(tr("Open R&un…"), this, &MainWindow::openRunDialog)
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  act_save_run_ = file->addAction(tr("Save Ru&n…"), this, &MainWindow::saveRunDialog);
  act_save_run_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
  act_save_run_->setToolTip(
      tr("One file with the settings, tokens, per-step records, trees and the "
         "picture: reopen it here, share it, or reproduce it from its settings"));
  auto* exp = file->addMenu(tr("&Export"));
  act_save_image_ = exp->addAction(tr("&Image as PNG…"), this, &MainWindow::saveImage);
  act_save_image_->setShortcut(QKeySequence::Save);
  act_save_maps_ = exp->addAction(tr("&Maps as PNG…"), this, &MainWindow::saveMaps);
  act_save_stats_ = exp->addAction(tr("Statistics as &JSON…"), this, &MainWindow::saveStats);
  act_save_csv_ = exp->addAction(tr("Statistics as &CSV…"), this, &MainWindow::saveStatsCsv);
  act_save_tree_ = exp->addAction(tr("Draft &Tree as SVG or PNG…"), this, &MainWindow::saveTree);
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  auto* edit = menuBar()->addMenu(tr("&Edit"));
  act_copy_image_ = edit->addAction(tr("&Copy Image"), this, [this] { copyImage(); });
  act_copy_image_->setShortcut(QKeySequence::Copy);  // a focused text field keeps Ctrl+C for text
  act_copy_image_->setToolTip(tr("Copy the picture, upscaled 4x with crisp pixels"));
  act_png_settings_ = edit->addAction(tr("Write Settings into &Exported PNGs"));
  act_png_settings_->setCheckable(true);
  act_png_settings_->setToolTip(
      tr("Keep the prompt, seed and every setting inside exported "
         "pictures; drop such a picture on the window to restore them"));
  edit->addSeparator();
  edit->addAction(tr("Save Settings as &Preset…"), this, [this] {
    bool ok = false;
    const QString name =
        QInputDialog::getText(this, tr("Save preset"), tr("Name for the method and its settings:"),
                              QLineEdit::Normal, method_->currentText(), &ok)
            .trimmed();
    if (ok && !name.isEmpty()) savePreset(name);
  });
  presets_menu_ = edit->addMenu(tr("P&resets"));
  connect(presets_menu_, &QMenu::aboutToShow, this, &MainWindow::fillPresetsMenu);

  auto* run = menuBar()->addMenu(tr("&Run"));
  act_generate_ = run->addAction(tr("&Generate"), this, &MainWindow::generate);
  act_generate_->setShortcuts(
      {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
  act_cancel_ = run->addAction(tr("&Cancel"), this, &MainWindow::cancel);
  act_cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
  run->addSeparator();
  run->addAction(tr("C&ompare Two Configurations…"), this, &MainWindow::openCompare)
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
  act_trace_ = run->addAction(tr("Record Step &Traces"));
  act_trace_->setCheckable(true);
  act_trace_->setChecked(true);
  act_trace_->setToolTip(
      tr("Keep every step's draft tree and target distributions for replay and "
         "the token inspector (a few hundred kB per run)"));
  run->addSeparator();
  act_step_back_ = run->addAction(tr("Replay: Previous Step"), replay_, &ReplayPanel::stepBack);
  act_step_back_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Left));
  act_step_fwd_ = run->addAction(tr("Replay: Next Step"), replay_, &ReplayPanel::stepForward);
  act_step_fwd_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Right));

  auto* model = menuBar()->addMenu(tr("&Model"));
  auto* dev = model->addMenu(tr("&Device"));
  device_group_ = new QActionGroup(this);
  const QStringList available = EngineBridge::availableDevices();
  for (const auto& [key, label] : {std::pair<QString, QString>{"cpu", tr("CPU")},
                                   std::pair<QString, QString>{"cuda", tr("CUDA (GPU)")}}) {
    auto* a = dev->addAction(label);
    a->setCheckable(true);
    a->setData(key);
    a->setEnabled(available.contains(key));
    if (!a->isEnabled()) a->setText(label + tr(" — not available in this build/machine"));
    device_group_->addAction(a);
  }
  device_group_->actions().first()->setChecked(true);
  auto* prec = model->addMenu(tr("&Precision"));
  dtype_group_ = new QActionGroup(this);
  for (const auto& [key, label] :
       {std::pair<QString, QString>{"fp32", tr("fp32 (exact; best on CPU)")},
        std::pair<QString, QString>{"bf16", tr("bf16 (GPU)")},
        std::pair<QString, QString>{"fp16", tr("fp16 (GPU)")}}) {
    auto* a = prec->addAction(label);
    a->setCheckable(true);
    a->setData(key);
    dtype_group_->addAction(a);
  }
  dtype_group_->actions().first()->setChecked(true);
  connect(device_group_, &QActionGroup::triggered, this, &MainWindow::reloadWithDevice);
  connect(dtype_group_, &QActionGroup::triggered, this, &MainWindow::reloadWithDevice);
  model->addSeparator();
  model->addAction(tr("Model &Card…"), this, &MainWindow::showModelCard);
  model->addAction(tr("Open the &Default Model"), this, &MainWindow::openDefaultModel);

  auto* view = menuBar()->addMenu(tr("&View"));
  auto* toggle = settings_dock_->toggleViewAction();
  toggle->setText(tr("&Settings Panel"));
  toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
  view->addAction(toggle);
  for (auto* d : {replay_dock_, inspector_dock_, histogram_dock_, history_dock_}) {
    view->addAction(d->toggleViewAction());
  }
  view->addSeparator();
  auto* fit = view->addAction(tr("Zoom to &Fit"), image_, [this] { image_->setZoom(0); });
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  view->addAction(tr("Zoom &In"), image_,
                  [this] {
                    image_->setZoom(
                        (image_->zoom() == 0 ? int(image_->effectiveScale()) : image_->zoom()) + 1);
                  })
      ->setShortcut(QKeySequence::ZoomIn);
  view->addAction(
          tr("Zoom &Out"), image_,
          [this] {
            image_->setZoom(std::max(
                1, (image_->zoom() == 0 ? int(image_->effectiveScale()) : image_->zoom()) - 1));
          })
      ->setShortcut(QKeySequence::ZoomOut);

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About ADT-Tree Studio"),
                       tr("<b>ADT-Tree Studio</b> 0.1<br>Image generation with visual "
                          "autoregressive models, accelerated by speculative decoding on "
                          "adjacency-adaptive draft trees (ADT-Tree).<br><br>Hover the image or a "
                          "map to inspect a token; every knob has a tooltip."));
  });
}

void MainWindow::connectBridge() {
  connect(bridge_, &EngineBridge::loadProgress, this,
          [this](const QString&, const QString& stage, double) {
            statusBar()->showMessage(stage + "…");
          });
  connect(bridge_, &EngineBridge::modelLoaded, this, &MainWindow::onModelLoaded);
  connect(bridge_, &EngineBridge::loadFailed, this, &MainWindow::onLoadFailed);
  connect(bridge_, &EngineBridge::jobStarted, this, &MainWindow::onJobStarted);
  connect(bridge_, &EngineBridge::stepsArrived, this, &MainWindow::onSteps);
  connect(bridge_, &EngineBridge::previewArrived, this, &MainWindow::onPreview);
  connect(bridge_, &EngineBridge::jobFinished, this, &MainWindow::onFinished);
  connect(bridge_, &EngineBridge::jobFailed, this, &MainWindow::onFailed);
  connect(bridge_, &EngineBridge::jobCancelled, this, &MainWindow::onCancelled);
}

// ---- settings ---------------------------------------------------------------------------------

void MainWindow::loadSettings() {
  QSettings s;
  // First start: a size that shows the image, the maps and the plots together.
  if (!restoreGeometry(s.value("window/geometry").toByteArray())) resize(1280, 800);
  first_layout_ = !restoreState(s.value("window/state").toByteArray());
  // First start: image 40%, maps 60%; maps and plots 5:2 in height.
  if (!top_split_->restoreState(s.value("window/topSplit").toByteArray()))
    top_split_->setSizes({400, 600});
  if (!main_split_->restoreState(s.value("window/mainSplit").toByteArray()))
    main_split_->setSizes({500, 200});
  prompt_->setText(s.value("run/prompt").toString());
  seed_->setValue(s.value("run/seed", 0).toInt());
  random_seed_->setChecked(s.value("run/randomSeed", false).toBool());
  const int idx = method_->findData(s.value("run/method", "adt").toString());
  if (idx >= 0) method_->setCurrentIndex(idx);
  lantern_->setChecked(s.value("run/lantern", false).toBool());
  act_trace_->setChecked(s.value("run/trace", true).toBool());
  act_png_settings_->setChecked(s.value("export/pngSettings", true).toBool());
  settings_->restoreState(s.value("run/settings").toString());
  device_ = s.value("model/device", "cpu").toString();
  dtype_ = s.value("model/dtype", "fp32").toString();
  for (auto* a : device_group_->actions()) {
    if (a->data().toString() == device_ && a->isEnabled()) a->setChecked(true);
  }
  if (!EngineBridge::availableDevices().contains(device_)) device_ = "cpu";
  for (auto* a : dtype_group_->actions()) {
    if (a->data().toString() == dtype_) a->setChecked(true);
  }
  updateRecentMenu();
  onMethodChanged();
}

void MainWindow::saveSettings() const {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("window/topSplit", top_split_->saveState());
  s.setValue("window/mainSplit", main_split_->saveState());
  s.setValue("run/prompt", prompt_->text());
  s.setValue("run/seed", seed_->value());
  s.setValue("run/randomSeed", random_seed_->isChecked());
  s.setValue("run/method", method_->currentData().toString());
  s.setValue("run/lantern", lantern_->isChecked());
  s.setValue("run/trace", act_trace_->isChecked());
  s.setValue("export/pngSettings", act_png_settings_->isChecked());
  s.setValue("run/settings", settings_->saveState());
  s.setValue("model/device", device_);
  s.setValue("model/dtype", dtype_);
}

void MainWindow::updateRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("model/recent").toStringList();
  for (const auto& dir : recent) {
    recent_menu_->addAction(QDir::toNativeSeparators(dir), this, [this, dir] { openModel(dir); });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecent(const QString& dir) {
  QSettings s;
  QStringList recent = s.value("model/recent").toStringList();
  recent.removeAll(dir);
  recent.prepend(dir);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue("model/recent", recent);
  updateRecentMenu();
}

// ---- model ------------------------------------------------------------------------------------

void MainWindow::openDefaultModel() {
  const auto d = findDefaultModel();
  statusBar()->showMessage(tr("Opening %1…").arg(d.source));
  openModel(d.dir, d.createRandom);
}

void MainWindow::openModel(const QString& dir, const QString& createRandom) {
  if (current_job_) cancel();  // a new model makes the running picture meaningless
  loading_dir_ = dir;
  if (!model_) image_->setPlaceholder(tr("Loading model…"));
  statusBar()->showMessage(tr("Loading %1…").arg(QDir::toNativeSeparators(dir)));
  bridge_->loadModel(dir, device_, dtype_, createRandom);
  setBusyUi();
}

void MainWindow::reloadWithDevice() {
  device_ =
      device_group_->checkedAction() ? device_group_->checkedAction()->data().toString() : "cpu";
  dtype_ =
      dtype_group_->checkedAction() ? dtype_group_->checkedAction()->data().toString() : "fp32";
  if (model_) openModel(QString::fromStdString(model_->dir));
}

void MainWindow::onModelLoaded(const engine::ModelLoaded& loaded) {
  const auto& info = loaded.info;
  model_ = info;
  loading_dir_.clear();
  QStringList vocab;
  for (const auto& w : info.vocabulary) vocab << QString::fromStdString(w);
  prompt_->setVocabulary(vocab, info.vocabulary_is_classes);
  prompt_file_button_->setVisible(info.prompt_is_file);
  if (info.prompt_is_file) {
    prompt_->setPlaceholderText(
        tr("Path of a caption-embedding file (.safetensors; Embedding… "
           "picks one)"));
  } else if (info.vocabulary_is_classes) {
    prompt_->setPlaceholderText(
        tr("A class: name, synonym or number, e.g. \"golden retriever\" "
           "or 207 (Tab/arrows pick a completion)"));
  } else {
    prompt_->setPlaceholderText(
        tr("Describe the image, e.g. \"red apple noto\" (words from the "
           "model's vocabulary; Tab/arrows pick a completion)"));
  }
  image_->setTokenColors(info.token_colors);
  // The same model as last time keeps the user's sampling; another model brings its own defaults.
  const QString dir_key = QDir(QString::fromStdString(info.dir)).absolutePath();
  QSettings qs;
  settings_->setModel(info.default_sampling, info.codebook_size, info.grid_h * info.grid_w,
                      qs.value("model/last").toString() != dir_key);
  qs.setValue("model/last", dir_key);

  // Methods the model cannot run are shown but disabled, with the reason.
  auto* items = qobject_cast<QStandardItemModel*>(method_->model());
  for (int i = 0; i < method_->count(); ++i) {
    const QString key = method_->itemData(i).toString();
    const bool needs_drafter = is_tree_method(key);
    const bool ok = !needs_drafter || info.has_drafter;
    if (items) items->item(i)->setEnabled(ok);
    method_->setItemData(i,
                         ok ? method_help(key)
                            : method_help(key) + tr("\nNot available: this model has no draft "
                                                    "head (drafter.safetensors)."),
                         Qt::ToolTipRole);
  }
  if (items && !items->item(method_->currentIndex())->isEnabled()) {
    method_->setCurrentIndex(method_->findData("ar"));
  }

  const QString dir = QString::fromStdString(info.dir);
  banner_->setVisible(info.random_weights);
  if (info.random_weights) {
    banner_->setText(tr("<b>Random model “%1”</b>: its weights are random numbers, so it draws "
                        "noise (the pipeline and the statistics are real). Open a trained model "
                        "with <i>File ▸ Open Model</i>.")
                         .arg(QString::fromStdString(info.name).toHtmlEscaped()));
  }
  model_label_->setText(tr("Model: <b>%1</b> · %2×%3 tokens · %4 params")
                            .arg(QString::fromStdString(info.name).toHtmlEscaped())
                            .arg(info.grid_w)
                            .arg(info.grid_h)
                            .arg(format_params(info.gpt_params)));
  model_label_->setToolTip(QDir::toNativeSeparators(dir));
  device_label_->setText(QStringLiteral("%1 · %2").arg(
      QString::fromStdString(info.device).toUpper(), QString::fromStdString(info.dtype)));
  if (!isRunning()) {
    // The empty canvas and maps of this model's grid, so the window shows what is coming.
    // Colour scales already span what the current settings can produce, not a placeholder 0..1.
    MapRanges ranges;
    try {
      ranges = ranges_for(settings_->request(method_->currentData().toString(), false, 0));
    } catch (const std::exception&) {
      // Invalid settings: the scales stay at their defaults until the next run says otherwise.
    }
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
  statusBar()->showMessage(
      tr("Loaded %1 in %2 ms").arg(QDir::toNativeSeparators(dir)).arg(int(loaded.load_ms)), 8000);
  // Every model a user opened is worth a shortcut, except the automatic random fallback.
  if (QDir(dir) != QDir(randomModelDir())) addRecent(dir);
  setWindowTitle(tr("ADT-Tree Studio — %1").arg(QString::fromStdString(info.name)));
  if (compare_) compare_->setModel(info);
  setBusyUi();
  Q_EMIT modelReady();
}

void MainWindow::onLoadFailed(const QString& dir, const QString& message) {
  loading_dir_.clear();
  if (model_) {
    // The menus show what is loaded, not the device or precision that just failed.
    device_ = QString::fromStdString(model_->device).section(':', 0, 0);
    dtype_ = QString::fromStdString(model_->dtype);
    for (auto* a : device_group_->actions()) a->setChecked(a->data().toString() == device_);
    for (auto* a : dtype_group_->actions()) a->setChecked(a->data().toString() == dtype_);
  }
  setBusyUi();
  QString keep = model_ ? tr("Still using %1.").arg(QString::fromStdString(model_->name))
                        : tr("No model is loaded: open one with File ▸ Open Model.");
  if (!model_) image_->setPlaceholder(tr("No model loaded.\nFile ▸ Open Model… (Ctrl+O)"));
  statusBar()->showMessage(tr("Could not open %1").arg(QDir::toNativeSeparators(dir)), 10000);
  showError(tr("Could not open the model"),
            tr("The directory %1 could not be opened as a model.")
                    .arg("<b>" + QDir::toNativeSeparators(dir).toHtmlEscaped() + "</b>") +
                "<br><br>" + keep,
            message);
  Q_EMIT modelLoadFailed(message);
}

void MainWindow::showModelCard() {
  if (!model_) {
    showError(tr("No model"), tr("No model is loaded."));
    return;
  }
  const auto& m = *model_;
  auto q = [](const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); };
  QString html = QStringLiteral("<h3>%1</h3><p>%2</p><table>").arg(q(m.name), q(m.description));
  auto row = [&](const QString& k, const QString& v) {
    html += QStringLiteral("<tr><td><b>%1</b>&nbsp;&nbsp;</td><td>%2</td></tr>").arg(k, v);
  };
  row(tr("Directory"), q(m.dir));
  row(tr("Kind"), q(m.kind));
  row(tr("Token grid"), QStringLiteral("%1 × %2").arg(m.grid_w).arg(m.grid_h));
  row(tr("Image"), QStringLiteral("%1 × %2 px").arg(m.image_w).arg(m.image_h));
  row(tr("Codebook"), QString::number(m.codebook_size));
  row(tr("Transformer"), q(m.gpt_shape) + ", " + format_params(m.gpt_params) + tr(" parameters"));
  row(tr("Draft head"), m.has_drafter ? tr("yes") : tr("no (AR and Jacobi methods only)"));
  row(tr("Vocabulary"), m.prompt_is_file
                            ? tr("none: prompts are caption-embedding files")
                            : QString::number(m.vocabulary_size) +
                                  (m.vocabulary_is_classes ? tr(" classes") : tr(" words")));
  row(tr("Licence"), q(m.license));
  row(tr("Device"), q(m.device) + " · " + q(m.dtype));
  html += "</table>";
  auto* box =
      new QMessageBox(QMessageBox::Information, tr("Model card"), html, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

// ---- running ----------------------------------------------------------------------------------

void MainWindow::onMethodChanged() {
  const QString m = method_->currentData().toString();
  lantern_->setEnabled(is_tree_method(m));
  settings_->setMethod(m, lantern_->isChecked());
}

void MainWindow::setBusyUi() {
  const bool loading = !loading_dir_.isEmpty();
  const bool can_generate = model_.has_value() && !loading && !isRunning();
  generate_button_->setEnabled(can_generate);
  act_generate_->setEnabled(can_generate);
  cancel_button_->setEnabled(isRunning());
  act_cancel_->setEnabled(isRunning());
  const bool shown = shownRecord() != nullptr && !isRunning();
  act_save_image_->setEnabled(!last_image_.isNull() && !isRunning());
  act_copy_image_->setEnabled(!last_image_.isNull() && !isRunning());
  act_save_stats_->setEnabled(!last_stats_json_.isEmpty() && !isRunning());
  act_save_csv_->setEnabled(shown);
  act_save_maps_->setEnabled(shown);
  act_save_run_->setEnabled(shown);
  act_save_tree_->setEnabled(shown && run_.hasTraces());
  act_step_back_->setEnabled(shown);
  act_step_fwd_->setEnabled(shown);
}

void MainWindow::generate() {
  if (!model_ || !loading_dir_.isEmpty() || isRunning()) return;
  const QString prompt = prompt_->text().trimmed();
  if (prompt.isEmpty()) {
    statusBar()->showMessage(tr("Type a prompt first."), 5000);
    prompt_->setFocus();
    return;
  }
  if (random_seed_->isChecked()) seed_->setValue(int(QRandomGenerator::global()->bounded(1 << 30)));
  const QString method = method_->currentData().toString();
  decode::DecodeRequest request;
  try {
    request = settings_->request(method, lantern_->isChecked() && lantern_->isEnabled(),
                                 quint64(seed_->value()));
  } catch (const std::exception& e) {
    showError(tr("Invalid settings"), tr("The settings do not form a valid request."), e.what());
    return;
  }
  request.trace.enabled = act_trace_->isChecked();
  pending_ranges_ = ranges_for(request);
  current_job_ = bridge_->submit(prompt, request);
  job_clock_.start();
  progress_->setRange(0, int(model_->grid_h * model_->grid_w));
  progress_->setValue(0);
  progress_text_->setText(tr("starting…"));
  statusBar()->showMessage(tr("Generating “%1” with %2, seed %3…")
                               .arg(prompt, method_label(method))
                               .arg(seed_->value()));
  saveSettings();
  setBusyUi();
}

void MainWindow::cancel() {
  if (!current_job_) return;
  bridge_->cancel(current_job_);
  statusBar()->showMessage(tr("Cancelling…"));
}

void MainWindow::onJobStarted(const engine::JobStarted& s) {
  if (s.job != current_job_) return;
  run_.reset(s, pending_ranges_);
  shown_id_ = 0;
  inspected_cell_ = -1;
  inspector_->clear();
  replay_->clearRun(tr("Replay is available when the run has finished."));
  image_->startRun(int(s.grid_h), int(s.grid_w), int(s.image_h), int(s.image_w));
  image_->setRunning(true);
  heatmaps_->setHoverText({});
  progress_->setRange(0, int(s.total_tokens));
  frame_count_ = 0;
  frame_timer_.start();
  onFrame();
}

void MainWindow::onSteps(const std::vector<engine::JobStep>& steps) {
  // Bookkeeping only; the frame timer paints.
  run_.addSteps(steps);
}

void MainWindow::onPreview(const engine::JobPreview& p) {
  if (p.job != current_job_ || p.image.empty()) return;
  const auto& im = p.image;
  QImage img(im.pixels.data(), im.width, im.height, im.width * 3, QImage::Format_RGB888);
  image_->setPreview(img.copy(), int(p.valid_cells));  // copy: the event's buffer goes away
}

void MainWindow::onFinished(const engine::JobFinished& f) {
  if (f.job != current_job_) return;
  run_.finish(f);
  const auto& im = f.image;
  if (!im.empty()) {
    last_image_ =
        QImage(im.pixels.data(), im.width, im.height, im.width * 3, QImage::Format_RGB888).copy();
    image_->setPreview(last_image_, int(f.tokens.size()));
  }
  last_stats_json_ = QString::fromStdString(f.stats_json);
  last_job_ms_ = f.elapsed_ms;
  last_decode_cpu_ms_ = f.decode_cpu_ms;
  QString rule;  // the acceptance rule the run used, said in the status line
  try {
    RunRecord r = recordFromFinished(f);
    rule = QString::fromStdString(r.stats.settings.value("verify", std::string()));
    r.id = next_run_id_++;
    shown_id_ = r.id;
    addToHistory(std::move(r));
  } catch (const std::exception& e) {
    // The run is on screen either way; only its history entry and replay are missing.
    statusBar()->showMessage(tr("The run's statistics could not be read back: %1").arg(e.what()),
                             10000);
  }
  replay_->setRun(run_);
  onReplayStep(replay_->step());
  const auto& s = f.summary;
  endRun("finished", tr("Done: %1 tokens in %2 (%3 tokens/s), τ = %4, %5 steps%6")
                         .arg(s.tokens)
                         .arg(format_seconds(f.elapsed_ms / 1000.0))
                         .arg(s.tokens_per_s, 0, 'f', 0)
                         .arg(s.tau, 0, 'f', 2)
                         .arg(s.steps)
                         .arg(rule.isEmpty() ? QString() : tr(", %1 verification").arg(rule)));
  Q_EMIT generationFinished();
}

void MainWindow::onFailed(engine::JobId job, const QString& message) {
  if (job != current_job_) return;
  endRun("failed", tr("Generation failed."));
  showError(tr("Generation failed"), tr("The image could not be generated."), message);
}

void MainWindow::onCancelled(engine::JobId job, qint64 tokens) {
  if (job != current_job_) return;
  endRun("cancelled", tr("Cancelled after %1 tokens.").arg(tokens));
}

void MainWindow::endRun(const QString& how, const QString& status) {
  current_job_ = 0;
  frame_timer_.stop();
  image_->setRunning(false);
  // One last full paint so the final state is on screen whatever the frame phase was.
  image_->setCommitted(run_.committed(), run_.tokens());
  image_->refresh();
  heatmaps_->refresh(run_);
  plots_->refresh(run_);
  updateProgress();
  statusBar()->showMessage(status, how == "finished" ? 0 : 10000);
  setBusyUi();
  Q_EMIT generationEnded(how);
}

void MainWindow::onFrame() {
  image_->setCommitted(run_.committed(), run_.tokens());
  image_->refresh();
  updateProgress();
  if (++frame_count_ % kPlotEveryFrames == 0) {
    heatmaps_->refresh(run_);
    plots_->refresh(run_);
  }
}

void MainWindow::updateProgress() {
  progress_->setValue(run_.committed());
  if (run_.viewStep() >= 0) {
    // Replaying: the numbers of the run so far, up to the chosen step.
    progress_text_->setText(tr("replay: step %1 of %2  ·  %3 tokens committed so far")
                                .arg(run_.viewStep())
                                .arg(run_.steps() - 1)
                                .arg(run_.committed()));
    return;
  }
  const double elapsed = isRunning() ? job_clock_.elapsed() / 1000.0 : run_.elapsedMs() / 1000.0;
  const double eta = run_.etaSeconds();
  const QString eta_text =
      isRunning() ? tr("ETA %1").arg(format_seconds(eta), 7)
                  : (run_.committed() == run_.cells() && run_.cells() > 0 ? tr("done") : QString());
  progress_text_->setText(tr("step %1  τ %2  %3 tok/s  %4 elapsed  %5")
                              .arg(run_.steps(), 4)
                              .arg(run_.tau(), 4, 'f', 2)
                              .arg(run_.tokensPerSecond(), 5, 'f', 0)
                              .arg(format_seconds(elapsed), 7)
                              .arg(eta_text));
}

void MainWindow::onCellHovered(int cell) {
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

// ---- files and errors -------------------------------------------------------------------------

void MainWindow::showError(const QString& title, const QString& text, const QString& details) {
  // Window-modal but not blocking: the event loop (and a running engine) carries on.
  auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
  box->setObjectName("errorDialog");
  box->setTextFormat(Qt::RichText);
  if (!details.isEmpty()) box->setInformativeText(details.toHtmlEscaped());
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

// ---- history, replay, inspector ---------------------------------------------------------------

const RunRecord* MainWindow::shownRecord() const {
  for (const auto& r : history_) {
    if (r.id == shown_id_) return &r;
  }
  return nullptr;
}

namespace {
HistogramRun histogram_of(const RunRecord& r) {
  HistogramRun h;
  h.label = QStringLiteral("#%1 %2 · %3").arg(r.id).arg(r.label, r.prompt.left(24));
  for (const auto& st : r.stats.steps) h.acceptLengths.push_back(int(st.committed));
  for (size_t c = 0; c < r.tokens.size(); ++c) {
    const auto& cs = r.stats.grids.at(int64_t(c));
    if (cs.depth > 0) h.acceptedRanks.push_back(cs.rank);
  }
  return h;
}
}  // namespace

void MainWindow::addToHistory(RunRecord r) {
  // A session keeps its last 50 runs: ~1 MB each with traces.
  constexpr int kMaxHistory = 50;
  while (history_.size() >= kMaxHistory) {
    history_panel_->removeRun(history_.front().id);
    histograms_->removeRun(history_.front().id);
    history_.removeFirst();
  }
  history_panel_->addRun(r);
  histograms_->setRun(r.id, histogram_of(r));
  history_.push_back(std::move(r));
  setBusyUi();
}

void MainWindow::showHistoryRun(int id) {
  if (isRunning()) {
    statusBar()->showMessage(tr("A run is in progress: earlier runs can be shown when it ends."),
                             5000);
    return;
  }
  for (const auto& r : history_) {
    if (r.id == id) {
      showRecord(r);
      return;
    }
  }
}

void MainWindow::showRecord(const RunRecord& r) {
  shown_id_ = r.id;
  MapRanges ranges;
  try {
    ranges =
        ranges_for(decode::DecodeRequest{decode::MethodSettings::from_json(r.stats.settings.value(
                                             "method_settings", nlohmann::json::object())),
                                         {},
                                         0,
                                         {}});
  } catch (const std::exception&) {
    // Settings from another version: the ranges grow to what the run holds.
  }
  run_.restore(r.stats, r.tokens, r.elapsedMs, ranges);
  last_image_ = r.image;
  last_stats_json_ = QString::fromStdString(r.json.dump(1));
  last_job_ms_ = r.elapsedMs;
  const int h = r.gridH(), w = r.gridW();
  image_->startRun(h, w, r.image.isNull() ? h * 8 : r.image.height(),
                   r.image.isNull() ? w * 8 : r.image.width());
  if (!r.image.isNull()) image_->setPreview(r.image, int(r.tokens.size()));
  image_->setCommitted(run_.committed(), run_.tokens());
  image_->refresh();
  heatmaps_->refresh(run_);
  plots_->refresh(run_);
  progress_->setRange(0, std::max(1, run_.cells()));
  updateProgress();
  inspected_cell_ = -1;
  inspector_->clear();
  replay_->setRun(run_);
  onReplayStep(replay_->step());
  history_panel_->setCurrent(r.id);
  histograms_->setRun(r.id, histogram_of(r));
  statusBar()->showMessage(tr("Showing run #%1: “%2”, %3").arg(r.id).arg(r.prompt, r.summaryLine()),
                           8000);
  setBusyUi();
}

void MainWindow::onReplayStep(int step) {
  // Only a finished (or restored) run can be replayed; a live one is still growing.
  if (step < 0 || run_.steps() == 0 || !run_.finished()) return;
  run_.setViewStep(step);
  const int shown = run_.committed();
  if (!last_image_.isNull()) image_->setPreview(last_image_, shown);
  image_->setCommitted(shown, run_.tokens());
  // The step's first new cell is outlined, so the eye finds what this step added.
  // (Not at the end of the run: there the whole picture is the point.)
  const int first = run_.viewStep() >= 0 ? run_.stepFirstCell(step) : -1;
  image_->setHighlight(first < run_.cells() ? first : -1);
  heatmaps_->setHighlight(first < run_.cells() ? first : -1);
  image_->refresh();
  heatmaps_->refresh(run_);
  updateProgress();
  const RunRecord* rec = shownRecord();
  const decode::StepRecord* sr =
      rec && step < int(rec->stats.steps.size()) ? &rec->stats.steps[size_t(step)] : nullptr;
  replay_->showTrace(run_.trace(step), sr);
  setBusyUi();
}

void MainWindow::inspectCell(int cell) {
  if (cell < 0 || cell >= run_.cells()) return;
  inspected_cell_ = cell;
  inspector_dock_->show();
  inspector_dock_->raise();
  if (const auto* c = run_.cellTrace(cell); c && run_.filled(cell)) {
    inspector_->setCell(*c, run_.gridW(), method_label(run_.method()));
  } else {
    inspector_->clear();
    statusBar()->showMessage(
        !run_.filled(cell) ? tr("Cell (%1, %2) is not generated yet.")
                                 .arg(cell / run_.gridW())
                                 .arg(cell % run_.gridW())
                           : tr("This run has no step traces (Run ▸ Record Step Traces), so the "
                                "distribution at a cell was not kept."),
        6000);
  }
}

void MainWindow::raiseDock(const QString& name) {
  QDockWidget* d = name == "inspector"    ? inspector_dock_
                   : name == "histograms" ? histogram_dock_
                   : name == "history"    ? history_dock_
                   : name == "replay"     ? replay_dock_
                   : name == "settings"   ? settings_dock_
                                          : nullptr;
  if (!d) return;
  d->show();
  d->raise();
}

// ---- files and exports ------------------------------------------------------------------------

void MainWindow::openRunDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a run"), QDir::homePath(),
                                                    tr("ADT-Tree runs (*.adtrun.json *.json)"));
  if (!path.isEmpty()) openRunFile(path);
}

bool MainWindow::openRunFile(const QString& path) {
  if (isRunning()) {
    showError(tr("A run is in progress"), tr("Wait for the run to finish (or cancel it) first."));
    return false;
  }
  QString error;
  auto r = loadRunFile(path, &error);
  if (!r) {
    showError(tr("Could not open the run"),
              tr("%1 could not be opened as a run.").arg(path.toHtmlEscaped()), error);
    return false;
  }
  r->id = next_run_id_++;
  if (r->image.isNull()) {
    statusBar()->showMessage(
        tr("The file has no picture (a CLI statistics file): tokens are shown in "
           "their codes' colours."),
        8000);
  }
  addToHistory(*r);
  showRecord(history_.back());
  return true;
}

void MainWindow::saveRunDialog() {
  const RunRecord* r = shownRecord();
  if (!r) return;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save run"),
      QDir::home().filePath(QStringLiteral("adtree-run-%1.adtrun.json").arg(r->id)),
      tr("ADT-Tree runs (*.adtrun.json)"));
  if (!path.isEmpty()) saveRunFile(path);
}

bool MainWindow::saveRunFile(const QString& path) {
  const RunRecord* r = shownRecord();
  if (!r) return false;
  QString error;
  if (!ui::saveRunFile(*r, path, &error)) {
    showError(tr("Could not save the run"), tr("The run was not saved."), error);
    return false;
  }
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  return true;
}

void MainWindow::saveImage() {
  if (last_image_.isNull()) return;
  bool ok = false;
  // Small images are worth enlarging with crisp pixels for slides; offer the common factors.
  const QStringList scales{"1", "2", "4", "8", "16"};
  const int suggested = std::clamp(512 / std::max(1, last_image_.width()), 1, 16);
  int current = 0;
  for (int i = 0; i < scales.size(); ++i) {
    if (scales[i].toInt() <= suggested) current = i;
  }
  const QString pick = QInputDialog::getItem(this, tr("Export image"),
                                             tr("Upscale (nearest neighbour, crisp tokens):"),
                                             scales, current, false, &ok);
  if (!ok) return;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export image"), QDir::home().filePath("adtree.png"), tr("PNG images (*.png)"));
  if (!path.isEmpty()) exportImage(path, pick.toInt());
}

void MainWindow::savePreset(const QString& name) {
  PresetStore().save(name, Preset{method_->currentData().toString(), lantern_->isChecked(),
                                  settings_->saveState()});
  statusBar()->showMessage(tr("Saved the preset “%1”").arg(name), 3000);
}

bool MainWindow::applyPreset(const QString& name) {
  const auto p = PresetStore().load(name);
  const int idx = p ? method_->findData(p->method) : -1;
  if (idx < 0) {
    statusBar()->showMessage(tr("The preset “%1” cannot be read").arg(name), 5000);
    return false;
  }
  method_->setCurrentIndex(idx);
  lantern_->setChecked(p->lantern && lantern_->isEnabled());
  settings_->restoreState(p->settings);
  statusBar()->showMessage(tr("Applied the preset “%1”").arg(name), 3000);
  return true;
}

void MainWindow::fillPresetsMenu() {
  presets_menu_->clear();
  const QStringList names = PresetStore().names();
  for (const auto& n : names) presets_menu_->addAction(n, this, [this, n] { applyPreset(n); });
  if (names.isEmpty()) presets_menu_->addAction(tr("(none saved yet)"))->setEnabled(false);
  auto* del = presets_menu_->addMenu(tr("&Delete"));
  del->setEnabled(!names.isEmpty());
  for (const auto& n : names) del->addAction(n, this, [n] { PresetStore().remove(n); });
}

bool MainWindow::copyImage() {
  if (last_image_.isNull()) return false;
  // 4x with nearest neighbour: a 64 x 64 picture pasted elsewhere stays crisp and visible.
  QGuiApplication::clipboard()->setImage(
      last_image_.scaled(last_image_.size() * 4, Qt::IgnoreAspectRatio, Qt::FastTransformation));
  statusBar()->showMessage(tr("Copied the picture to the clipboard"), 3000);
  return true;
}

bool MainWindow::exportImage(const QString& path, int scale) {
  if (last_image_.isNull()) return false;
  scale = std::clamp(scale, 1, 64);
  QImage big =
      last_image_.scaled(last_image_.size() * scale, Qt::IgnoreAspectRatio, Qt::FastTransformation);
  // How it was made, in the PNG's text chunk "adtree-settings" (the CLI writes the same key).
  const RunRecord* r = shownRecord();
  if (r && act_png_settings_->isChecked()) {
    const nlohmann::json j = {
        {"app", "adtree-studio 0.1.0"},
        {"model", {{"dir", r->model.toStdString()}}},
        {"prompt", r->prompt.toStdString()},
        {"seed", r->seed},
        {"method_settings", r->stats.settings.value("method_settings", nlohmann::json::object())},
        {"sampling", r->stats.settings.value("sampling", nlohmann::json::object())},
        {"verify", r->stats.settings.value("verify", std::string())}};
    big.setText(kPngSettingsKey, QString::fromStdString(j.dump(-1, ' ', /*ensure_ascii=*/true)));
  }
  if (!big.save(path, "PNG")) {
    showError(tr("Could not save"), tr("Could not write %1.").arg(path.toHtmlEscaped()));
    return false;
  }
  statusBar()->showMessage(tr("Saved %1 (%2×%3)").arg(path).arg(big.width()).arg(big.height()),
                           5000);
  return true;
}

void MainWindow::saveMaps() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Export the maps into a folder"),
                                                        QDir::homePath());
  if (dir.isEmpty()) return;
  const RunRecord* r = shownRecord();
  exportMaps(dir, r ? QStringLiteral("adtree-run-%1").arg(r->id) : QStringLiteral("adtree"));
}

bool MainWindow::exportMaps(const QString& dir, const QString& prefix) {
  static const char* kNames[RunState::MapCount] = {"depth", "top1", "accept-length", "tree-depth",
                                                   "tree-width"};
  QStringList written;
  for (int m = 0; m < RunState::MapCount; ++m) {
    const QString path = QDir(dir).filePath(QStringLiteral("%1-%2.png").arg(prefix, kNames[m]));
    if (!heatmaps_->saveMapPng(RunState::Map(m), path)) {
      showError(tr("Could not save"), tr("Could not write %1.").arg(path.toHtmlEscaped()));
      return false;
    }
    written << QFileInfo(path).fileName();
  }
  statusBar()->showMessage(tr("Saved %1 in %2").arg(written.join(", "), dir), 8000);
  return true;
}

void MainWindow::saveStats() {
  if (last_stats_json_.isEmpty()) return;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save statistics"), QDir::home().filePath("adtree-stats.json"), tr("JSON (*.json)"));
  if (!path.isEmpty()) exportStatsJson(path);
}

namespace {
bool write_text(const QString& path, const QByteArray& data) {
  QSaveFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(data) == data.size() && f.commit();
}
}  // namespace

bool MainWindow::exportStatsJson(const QString& path) {
  if (last_stats_json_.isEmpty()) return false;
  if (!write_text(path, last_stats_json_.toUtf8())) {
    showError(tr("Could not save"), tr("Could not write %1.").arg(path.toHtmlEscaped()));
    return false;
  }
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  return true;
}

void MainWindow::saveStatsCsv() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save statistics as CSV"),
                                   QDir::home().filePath("adtree-cells.csv"), tr("CSV (*.csv)"));
  if (!path.isEmpty()) exportStatsCsv(path);
}

bool MainWindow::exportStatsCsv(const QString& path) {
  const RunRecord* r = shownRecord();
  if (!r) return false;
  if (!write_text(path, cellsCsv(*r).toUtf8())) {
    showError(tr("Could not save"), tr("Could not write %1.").arg(path.toHtmlEscaped()));
    return false;
  }
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  return true;
}

void MainWindow::saveTree() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export the draft tree"),
      QDir::home().filePath(QStringLiteral("adtree-tree-step-%1.svg").arg(replay_->step())),
      tr("SVG (*.svg);;PNG (*.png)"));
  if (!path.isEmpty()) exportTree(path);
}

bool MainWindow::exportTree(const QString& path) {
  const bool svg = path.endsWith(".svg", Qt::CaseInsensitive);
  const bool ok = svg ? replay_->treeView()->saveSvg(path) : replay_->treeView()->savePng(path);
  if (!ok) {
    showError(tr("Could not save"), tr("Could not write %1.").arg(path.toHtmlEscaped()));
    return false;
  }
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  return true;
}

// ---- compare ----------------------------------------------------------------------------------

CompareWindow* MainWindow::compareWindow() {
  if (!compare_) {
    compare_ = new CompareWindow(bridge_, this);
    if (model_) compare_->setModel(*model_);
    // Start from the main window's configuration against AR: the first question a user asks.
    compare_->setSide(0, "ar", false);
    try {
      const auto req =
          settings_->request(method_->currentData().toString(), lantern_->isChecked(), 0);
      compare_->setSide(1, method_->currentData().toString(),
                        lantern_->isChecked() && lantern_->isEnabled(), &req);
    } catch (const std::exception&) {
      compare_->setSide(1, method_->currentData().toString(), false);
    }
  }
  compare_->setPrompt(prompt_->text().trimmed());
  compare_->setSeed(quint64(seed_->value()));
  return compare_;
}

void MainWindow::openCompare() {
  auto* c = compareWindow();
  c->show();
  c->raise();
  c->activateWindow();
}

// Drag and drop: a model directory, a run file or an exported PNG from the file manager.
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
  if (fi.isFile() && fi.suffix().compare("png", Qt::CaseInsensitive) == 0) {
    return restoreFromPng(fi.absoluteFilePath());
  }
  if (fi.isFile()) return openRunFile(fi.absoluteFilePath());
  showError(tr("Nothing to open"),
            tr("%1 is neither a model directory nor a run file.").arg(path.toHtmlEscaped()));
  return false;
}

bool MainWindow::restoreFromPng(const QString& path) {
  const QString text = QImage(path).text(kPngSettingsKey);
  nlohmann::json j;
  try {
    if (!text.isEmpty()) j = nlohmann::json::parse(text.toStdString());
  } catch (const nlohmann::json::exception&) {
  }
  const int idx = j.is_object() ? method_->findData(QString::fromStdString(
                                      j.value("method_settings", nlohmann::json::object())
                                          .value("method", std::string())))
                                : -1;
  if (idx < 0) {
    showError(tr("No settings in this picture"),
              tr("%1 carries no ADT-Tree Studio settings (saved without them, or by another "
                 "program).")
                  .arg(path.toHtmlEscaped()));
    return false;
  }
  decode::DecodeRequest r;
  try {
    r.method = decode::MethodSettings::from_json(j["method_settings"]);
    r.sampling =
        decode::SamplingParams::from_json(j.value("sampling", nlohmann::json()), r.sampling);
  } catch (const std::exception& e) {
    showError(tr("Unreadable settings"), tr("The settings in %1 cannot be read.").arg(path),
              e.what());
    return false;
  }
  method_->setCurrentIndex(idx);
  lantern_->setChecked(r.method.acceptance == decode::Acceptance::Lantern && lantern_->isEnabled());
  settings_->setRequest(r);
  prompt_->setText(QString::fromStdString(j.value("prompt", std::string())));
  random_seed_->setChecked(false);
  seed_->setValue(int(j.value("seed", uint64_t(0))));
  statusBar()->showMessage(tr("Restored the settings of %1").arg(QFileInfo(path).fileName()), 5000);
  return true;
}

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (!first_layout_) return;
  first_layout_ = false;
  // First start, at the window's real size: the replay strip and the inspector share the bottom
  // third and leave the image, maps and plots the rest.
  resizeDocks({replay_dock_, inspector_dock_}, {width() * 55 / 100, width() * 45 / 100},
              Qt::Horizontal);
  resizeDocks({replay_dock_}, {std::max(220, height() * 30 / 100)}, Qt::Vertical);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  saveSettings();
  frame_timer_.stop();
  // Cancels a running job and joins the worker: at most one decoding step.
  bridge_->shutdown();
  e->accept();
}

}  // namespace adtree::ui
