#include "ui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QCursor>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRandomGenerator>
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
#include "ui/default_model.h"
#include "ui/engine_bridge.h"
#include "ui/heatmap_panel.h"
#include "ui/image_view.h"
#include "ui/plot_panel.h"
#include "ui/prompt_edit.h"
#include "ui/settings_panel.h"

namespace adtree::ui {

namespace {

// The image repaints at ~30 frames per second; the maps and plots (nine QCustomPlot replots, ~6 ms
// together) five times a second: live enough to watch, and the GUI thread stays under ~10% of a
// core, which on a 2-core machine is time the decoding thread does not lose (docs/GUI.md).
constexpr int kFrameMs = 33;
constexpr int kPlotEveryFrames = 6;
constexpr int kMaxRecent = 8;

QString method_label(const QString& m) {
  if (m == "ar") return QObject::tr("Autoregressive (AR)");
  if (m == "static") return QObject::tr("Static tree (EAGLE-1)");
  if (m == "dynamic") return QObject::tr("Dynamic tree (EAGLE-2)");
  if (m == "adt") return QObject::tr("ADT-Tree");
  if (m == "sjd") return QObject::tr("SJD (Jacobi)");
  if (m == "pathspec") return QObject::tr("PathSpec (Jacobi)");
  return m;
}

QString method_help(const QString& m) {
  if (m == "ar") return QObject::tr("One target forward per token: the baseline, always available.");
  if (m == "static") return QObject::tr("A fixed draft tree from the EAGLE head, verified in one forward.");
  if (m == "dynamic") return QObject::tr("EAGLE-2: the draft tree grows where the head is confident.");
  if (m == "adt") {
    return QObject::tr("Adjacency-adaptive dynamic draft tree: each tree's depth and width start "
                       "from the neighbouring token's and adapt to how much was accepted.");
  }
  if (m == "sjd") return QObject::tr("Speculative Jacobi decoding: training-free, no draft head.");
  if (m == "pathspec") {
    return QObject::tr("Several Jacobi chains in parallel; the longest accepted one wins. With more "
                       "than one chain or PathRelax on it is lossy (see the Jacobi settings).");
  }
  return {};
}

bool is_tree_method(const QString& m) { return m == "static" || m == "dynamic" || m == "adt"; }

// Map ranges known from the settings, so colours mean the same from the first token to the last.
MapRanges ranges_for(const decode::DecodeRequest& r) {
  MapRanges g;
  const auto& m = r.method;
  if (m.method == "adt") {
    g.depth_max = double(m.adt.d_max);
    g.accept_max = double(m.adt.d_max + 1);
    g.tree_d_min = double(m.adt.d_min);
    g.tree_d_max = double(m.adt.d_max);
    g.tree_k_min = double(m.adt.k_min);
    g.tree_k_max = double(m.adt.k_max);
  } else if (m.method == "dynamic") {
    const double d = double(m.dynamic_tree.depth + 1);
    g.depth_max = d;
    g.accept_max = d + 1;
    g.tree_d_min = g.tree_d_max = d;
    g.tree_k_min = g.tree_k_max = double(m.dynamic_tree.width);
  } else if (m.method == "static") {
    g.depth_max = 5;  // both presets have depth 5
    g.accept_max = 6;
  } else if (m.method == "sjd" || m.method == "pathspec") {
    // Depth = position in the window (SJD) or along the winning chain (PathSpec).
    const auto n = m.method == "pathspec" ? m.jacobi.path_length : m.jacobi.window;
    g.depth_max = double(n);
    g.accept_max = double(n + 1);
  }
  return g;
}

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

MainWindow::MainWindow(QWidget* parent) : MainWindow(engine::EngineOptions{}.preview_interval_ms, parent) {}

MainWindow::MainWindow(double previewIntervalMs, QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ADT-Tree Studio"));
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
  banner_->setStyleSheet("QLabel#randomModelBanner { background: #fff4ce; color: #5c4400; "
                         "border: 1px solid #e0c060; border-radius: 4px; padding: 5px 8px; }");
  banner_->setVisible(false);
  v->addWidget(banner_);

  // Row 1: the prompt and the two big buttons.
  auto* row1 = new QHBoxLayout;
  row1->setSpacing(6);
  prompt_ = new PromptEdit(central);
  prompt_->setPlaceholderText(tr("Describe the image, e.g. \"red apple noto\" (words from the model's "
                                 "vocabulary; Tab/arrows pick a completion)"));
  prompt_->setToolTip(tr("The prompt: words the model knows (completion lists them as you type) "
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
  row1->addWidget(prompt_, 1);
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
  for (const auto& m : decode::known_methods()) {
    const QString key = QString::fromStdString(m);
    method_->addItem(method_label(key), key);
    method_->setItemData(method_->count() - 1, method_help(key), Qt::ToolTipRole);
  }
  method_->setToolTip(tr("Decoding method. All lossless methods draw from the same distribution "
                         "as AR; they differ in speed.\nTree methods need the model's draft head "
                         "(drafter.safetensors)."));
  method_label_w->setBuddy(method_);
  lantern_ = new QCheckBox(tr("Relaxed acceptance (LANTERN)"), central);
  lantern_->setToolTip(tr("Accept a draft token when it is close in the VQ codebook to what the "
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
  random_seed_->setToolTip(tr("Draw a new seed for every generation (it is shown in the seed box, "
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
  progress_text_->setToolTip(tr("τ (tau) = tokens committed per target-model forward: 1 for AR, "
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
  scroll->setMinimumWidth(settings_->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() + 4);
  addDockWidget(Qt::LeftDockWidgetArea, settings_dock_);

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
}

void MainWindow::createActions() {
  auto* file = menuBar()->addMenu(tr("&File"));
  act_open_ = file->addAction(tr("&Open Model…"), this, [this] {
    const QString start = model_ ? QFileInfo(QString::fromStdString(model_->dir)).path() : QDir::homePath();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a model directory"), start);
    if (!dir.isEmpty()) openModel(dir);
  });
  act_open_->setShortcut(QKeySequence::Open);
  act_open_->setToolTip(tr("Open a model directory (model.json, gpt/vq.safetensors, text.json)"));
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  act_save_image_ = file->addAction(tr("&Save Image…"), this, &MainWindow::saveImage);
  act_save_image_->setShortcut(QKeySequence::Save);
  act_save_stats_ = file->addAction(tr("Save S&tatistics…"), this, &MainWindow::saveStats);
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  auto* run = menuBar()->addMenu(tr("&Run"));
  act_generate_ = run->addAction(tr("&Generate"), this, &MainWindow::generate);
  act_generate_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
  act_cancel_ = run->addAction(tr("&Cancel"), this, &MainWindow::cancel);
  act_cancel_->setShortcut(QKeySequence(Qt::Key_Escape));

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
  for (const auto& [key, label] : {std::pair<QString, QString>{"fp32", tr("fp32 (exact; best on CPU)")},
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
  auto* fit = view->addAction(tr("Zoom to &Fit"), image_, [this] { image_->setZoom(0); });
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  view->addAction(tr("Zoom &In"), image_, [this] {
    image_->setZoom((image_->zoom() == 0 ? int(image_->effectiveScale()) : image_->zoom()) + 1);
  })->setShortcut(QKeySequence::ZoomIn);
  view->addAction(tr("Zoom &Out"), image_, [this] {
    image_->setZoom(std::max(1, (image_->zoom() == 0 ? int(image_->effectiveScale()) : image_->zoom()) - 1));
  })->setShortcut(QKeySequence::ZoomOut);

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
          [this](const QString&, const QString& stage, double) { statusBar()->showMessage(stage + "…"); });
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
  restoreState(s.value("window/state").toByteArray());
  // First start: image 40%, maps 60%; maps and plots 5:2 in height.
  if (!top_split_->restoreState(s.value("window/topSplit").toByteArray())) top_split_->setSizes({400, 600});
  if (!main_split_->restoreState(s.value("window/mainSplit").toByteArray())) main_split_->setSizes({500, 200});
  prompt_->setText(s.value("run/prompt").toString());
  seed_->setValue(s.value("run/seed", 0).toInt());
  random_seed_->setChecked(s.value("run/randomSeed", false).toBool());
  const int idx = method_->findData(s.value("run/method", "adt").toString());
  if (idx >= 0) method_->setCurrentIndex(idx);
  lantern_->setChecked(s.value("run/lantern", false).toBool());
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
  device_ = device_group_->checkedAction() ? device_group_->checkedAction()->data().toString() : "cpu";
  dtype_ = dtype_group_->checkedAction() ? dtype_group_->checkedAction()->data().toString() : "fp32";
  if (model_) openModel(QString::fromStdString(model_->dir));
}

void MainWindow::onModelLoaded(const engine::ModelLoaded& loaded) {
  const auto& info = loaded.info;
  model_ = info;
  loading_dir_.clear();
  QStringList vocab;
  for (const auto& w : info.vocabulary) vocab << QString::fromStdString(w);
  prompt_->setVocabulary(vocab, info.vocabulary_is_classes);
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
    method_->setItemData(i, ok ? method_help(key)
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
  device_label_->setText(QStringLiteral("%1 · %2")
                             .arg(QString::fromStdString(info.device).toUpper(),
                                  QString::fromStdString(info.dtype)));
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
    image_->setPlaceholder(tr("Type a prompt and press Generate (Ctrl+Return).\nThe image appears "
                              "here token by token."));
    heatmaps_->refresh(run_);
    plots_->refresh(run_);
    progress_->setRange(0, int(info.grid_h * info.grid_w));
    progress_->setValue(0);
  }
  statusBar()->showMessage(tr("Loaded %1 in %2 ms").arg(QDir::toNativeSeparators(dir)).arg(int(loaded.load_ms)), 8000);
  // Every model a user opened is worth a shortcut, except the automatic random fallback.
  if (QDir(dir) != QDir(randomModelDir())) addRecent(dir);
  setWindowTitle(tr("ADT-Tree Studio — %1").arg(QString::fromStdString(info.name)));
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
                .arg("<b>" + QDir::toNativeSeparators(dir).toHtmlEscaped() + "</b>") + "<br><br>" + keep,
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
  row(tr("Vocabulary"), QString::number(m.vocabulary.size()) +
                            (m.vocabulary_is_classes ? tr(" classes") : tr(" words")));
  row(tr("Licence"), q(m.license));
  row(tr("Device"), q(m.device) + " · " + q(m.dtype));
  html += "</table>";
  auto* box = new QMessageBox(QMessageBox::Information, tr("Model card"), html, QMessageBox::Ok, this);
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
  act_save_image_->setEnabled(!last_image_.isNull());
  act_save_stats_->setEnabled(!last_stats_json_.isEmpty());
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
    last_image_ = QImage(im.pixels.data(), im.width, im.height, im.width * 3, QImage::Format_RGB888).copy();
    image_->setPreview(last_image_, int(f.tokens.size()));
  }
  last_stats_json_ = QString::fromStdString(f.stats_json);
  last_job_ms_ = f.elapsed_ms;
  last_decode_cpu_ms_ = f.decode_cpu_ms;
  const auto& s = f.summary;
  endRun("finished", tr("Done: %1 tokens in %2 (%3 tokens/s), τ = %4, %5 steps")
                         .arg(s.tokens)
                         .arg(format_seconds(f.elapsed_ms / 1000.0))
                         .arg(s.tokens_per_s, 0, 'f', 0)
                         .arg(s.tau, 0, 'f', 2)
                         .arg(s.steps));
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
  const double elapsed = isRunning() ? job_clock_.elapsed() / 1000.0 : run_.elapsedMs() / 1000.0;
  const double eta = run_.etaSeconds();
  const QString eta_text = isRunning() ? tr("ETA %1").arg(format_seconds(eta), 7)
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

void MainWindow::saveImage() {
  if (last_image_.isNull()) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save image"), QDir::home().filePath("adtree.png"),
                                                    tr("PNG images (*.png)"));
  if (path.isEmpty()) return;
  // Small images are saved enlarged with crisp pixels as well, so they are usable in slides.
  const int scale = std::max(1, 512 / std::max(1, last_image_.width()));
  const QImage big = last_image_.scaled(last_image_.size() * scale, Qt::IgnoreAspectRatio, Qt::FastTransformation);
  if (!big.save(path, "PNG")) {
    showError(tr("Could not save"), tr("Could not write %1.").arg(path.toHtmlEscaped()));
  } else {
    statusBar()->showMessage(tr("Saved %1 (%2×%3)").arg(path).arg(big.width()).arg(big.height()), 5000);
  }
}

void MainWindow::saveStats() {
  if (last_stats_json_.isEmpty()) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save statistics"), QDir::home().filePath("adtree-stats.json"),
                                                    tr("JSON (*.json)"));
  if (path.isEmpty()) return;
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(last_stats_json_.toUtf8()) < 0) {
    showError(tr("Could not save"), tr("Could not write %1.").arg(path.toHtmlEscaped()));
    return;
  }
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  saveSettings();
  frame_timer_.stop();
  // Cancels a running job and joins the worker: at most one decoding step.
  bridge_->shutdown();
  e->accept();
}

}  // namespace adtree::ui
