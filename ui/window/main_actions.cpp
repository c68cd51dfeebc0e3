#include "ui/window/main_actions.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>

#include "ui/gallery/run_view.h"
#include "ui/panels/model_card.h"
#include "ui/panels/prompt_bar.h"
#include "ui/panels/replay_panel.h"
#include "ui/views/compare_window.h"
#include "ui/views/image_view.h"
#include "ui/window/device_menu.h"
#include "ui/window/error_dialog.h"
#include "ui/window/exports.h"
#include "ui/window/gallery_menu.h"
#include "ui/window/presets_menu.h"
#include "ui/window/recent_models.h"
#include "ui/window/shipped_models.h"
#include "ui/window/text_encoder_menu.h"
#include "ui/window/window_commands.h"

namespace adtree::ui {

MainActions::MainActions(const Parts& parts) : QObject(parts.window), parts_(parts) {
  QMenuBar* bar = parts.window->menuBar();
  fileMenu(bar);
  editMenu(bar);
  runMenu(bar);
  modelMenu(bar);
  viewMenu(bar);
  helpMenu(bar);
}

void MainActions::setState(const State& s) {
  generate_->setEnabled(s.canGenerate);
  cancel_->setEnabled(s.running);
  const bool picture = s.picture && !s.running, shown = s.shown && !s.running;
  for (QAction* a : {save_image_, copy_image_}) a->setEnabled(picture);
  for (QAction* a : {save_stats_, save_csv_, save_maps_, save_run_, step_back_, step_forward_}) {
    a->setEnabled(shown);
  }
  save_tree_->setEnabled(shown && s.traces);
}

bool MainActions::traceOn() const {
  return trace_->isChecked();
}
bool MainActions::pngSettingsOn() const {
  return png_settings_->isChecked();
}

void MainActions::loadSettings(const QSettings& s) {
  trace_->setChecked(s.value("run/trace", true).toBool());
  png_settings_->setChecked(s.value("export/pngSettings", true).toBool());
  devices_->loadSettings(s);
  text_encoder_->loadSettings(s);
  gallery_menu_->showEnabled();
  recent_->refresh();
  recent_imports_->refresh();
}

void MainActions::saveSettings(QSettings& s) const {
  s.setValue("run/trace", trace_->isChecked());
  s.setValue("export/pngSettings", png_settings_->isChecked());
  devices_->saveSettings(s);
  text_encoder_->saveSettings(s);
}

void MainActions::fileMenu(QMenuBar* bar) {
  QMainWindow* w = parts_.window;
  WindowCommands* cmd = parts_.commands;
  auto* file = bar->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open Model…"), w, [w, cmd] {
    const QString start = cmd->model() ? QFileInfo(QString::fromStdString(cmd->model()->dir)).path()
                                       : QDir::homePath();
    const QString dir = QFileDialog::getExistingDirectory(w, tr("Open a model directory"), start);
    if (!dir.isEmpty()) cmd->openModel(dir);
  });
  open->setShortcut(QKeySequence::Open);
  open->setToolTip(tr("Open a model directory (model.json, gpt/vq.safetensors, text.json)"));
  shipped_ = new ShippedModels(file->addMenu(tr("Open &Shipped Model")), this);
  connect(shipped_, &ShippedModels::openRequested, w,
          [cmd](const QString& d) { cmd->openModel(d); });
  recent_ = new RecentModels(file->addMenu(tr("Open &Recent")), this);
  connect(recent_, &RecentModels::openRequested, w, [cmd](const QString& d) { cmd->openModel(d); });
  auto* import = file->addAction(tr("&Import Checkpoint…"), w, [cmd] { cmd->importCheckpoint(); });
  import->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
  import->setToolTip(
      tr("Convert a released LlamaGen checkpoint (c2i_L_256.pt, t2i_XL_stage1_256.pt, with its VQ "
         "and a LANTERN draft head) into a model directory and open it; no Python needed"));
  file->addSeparator();
  file->addAction(tr("Open R&un…"), w,
                  [w, cmd] {
                    const QString path =
                        QFileDialog::getOpenFileName(w, tr("Open a run"), QDir::homePath(),
                                                     tr("ADT-Tree runs (*.adtrun.json *.json)"));
                    if (!path.isEmpty()) cmd->openRunFile(path);
                  })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  save_run_ = file->addAction(tr("Save Ru&n…"), w, [this] { parts_.exports->askRunFile(); });
  save_run_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
  save_run_->setToolTip(
      tr("One file with the settings, tokens, per-step records, trees and the "
         "picture: reopen it here, share it, or reproduce it from its settings"));
  exportMenu(file);
  file->addSeparator();
  file->addAction(tr("&Quit"), w, &QWidget::close)->setShortcut(QKeySequence::Quit);
}

void MainActions::exportMenu(QMenu* file) {
  Exports* ex = parts_.exports;
  auto* menu = file->addMenu(tr("&Export"));
  save_image_ = menu->addAction(tr("&Image as PNG…"), this, [ex] { ex->askImage(); });
  save_image_->setShortcut(QKeySequence::Save);
  save_maps_ = menu->addAction(tr("&Maps as PNG…"), this, [ex] { ex->askMaps(); });
  save_stats_ = menu->addAction(tr("Statistics as &JSON…"), this, [ex] { ex->askStatsJson(); });
  save_csv_ = menu->addAction(tr("Statistics as &CSV…"), this, [ex] { ex->askStatsCsv(); });
  save_tree_ = menu->addAction(tr("Draft &Tree as SVG or PNG…"), this, [ex] { ex->askTree(); });
}

void MainActions::editMenu(QMenuBar* bar) {
  QMainWindow* w = parts_.window;
  WindowCommands* cmd = parts_.commands;
  auto* edit = bar->addMenu(tr("&Edit"));
  copy_image_ = edit->addAction(tr("&Copy Image"), w, [cmd] { cmd->copyImage(); });
  copy_image_->setShortcut(QKeySequence::Copy);  // a focused text field keeps Ctrl+C for text
  copy_image_->setToolTip(tr("Copy the picture, upscaled 4x with crisp pixels"));
  png_settings_ = edit->addAction(tr("Write Settings into &Exported PNGs"));
  png_settings_->setObjectName("pngSettingsAction");
  png_settings_->setCheckable(true);
  png_settings_->setToolTip(
      tr("Keep the prompt, seed and every setting inside exported "
         "pictures; drop such a picture on the window to restore them"));
  edit->addSeparator();
  new PresetsMenu(edit, parts_.bar, parts_.settings, parts_.status, this);
}

void MainActions::runMenu(QMenuBar* bar) {
  QMainWindow* w = parts_.window;
  WindowCommands* cmd = parts_.commands;
  auto* run = bar->addMenu(tr("&Run"));
  generate_ = run->addAction(tr("&Generate"), w, [cmd] { cmd->generate(); });
  generate_->setShortcuts(
      {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
  cancel_ = run->addAction(tr("&Cancel"), w, [cmd] { cmd->cancel(); });
  cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
  run->addSeparator();
  run->addAction(tr("C&ompare Two Configurations…"), w, [cmd] { cmd->showCompareWindow(); })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
  trace_ = run->addAction(tr("Record Step &Traces"));
  trace_->setObjectName("traceAction");
  trace_->setCheckable(true);
  trace_->setChecked(true);
  trace_->setToolTip(
      tr("Keep every step's draft tree and target distributions for replay and "
         "the token inspector (a few hundred kB per run)"));
  run->addSeparator();
  ReplayPanel* replay = parts_.replay;
  step_back_ = run->addAction(tr("Replay: Previous Step"), replay, &ReplayPanel::stepBack);
  step_back_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Left));
  step_forward_ = run->addAction(tr("Replay: Next Step"), replay, &ReplayPanel::stepForward);
  step_forward_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Right));
}

void MainActions::modelMenu(QMenuBar* bar) {
  QMainWindow* w = parts_.window;
  WindowCommands* cmd = parts_.commands;
  auto* model = bar->addMenu(tr("&Model"));
  devices_ = new DeviceMenu(model, this);
  connect(devices_, &DeviceMenu::changed, w, [cmd] {
    if (cmd->model()) cmd->openModel(QString::fromStdString(cmd->model()->dir));
  });
  text_encoder_ = new TextEncoderMenu(model, w, this);
  // Only a t2i-embeddings model reads it: another model needs no reload.
  connect(text_encoder_, &TextEncoderMenu::changed, w, [cmd] {
    if (cmd->model() && cmd->model()->prompt_is_file)
      cmd->openModel(QString::fromStdString(cmd->model()->dir));
  });
  model->addSeparator();
  model->addAction(tr("Model &Card…"), w, [w, cmd] {
    if (cmd->model()) {
      showModelCard(w, *cmd->model());
    } else {
      showError(w, tr("No model"), tr("No model is loaded."));
    }
  });
  model->addAction(tr("Open the &Default Model"), w, [cmd] { cmd->openDefaultModel(); });
  recent_imports_ =
      new RecentModels(model->addMenu(tr("Recent &Imports")), this, "model/recentImports");
  connect(recent_imports_, &RecentModels::openRequested, w,
          [cmd](const QString& d) { cmd->openModel(d); });
}

void MainActions::viewMenu(QMenuBar* bar) {
  auto* view = bar->addMenu(tr("&View"));
  view->addActions(parts_.dockToggles);
  gallery_menu_ = new GalleryMenu(view->addMenu(tr("&Gallery")), parts_.library, parts_.window);
  view->addSeparator();
  ImageView* image = parts_.view->image();
  auto* fit = view->addAction(tr("Zoom to &Fit"), image, [image] { image->setZoom(0); });
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  auto zoomBy = [image](int delta) {
    const int now = image->zoom() == 0 ? int(image->effectiveScale()) : image->zoom();
    image->setZoom(std::max(1, now + delta));
  };
  view->addAction(tr("Zoom &In"), image, [zoomBy] { zoomBy(+1); })
      ->setShortcut(QKeySequence::ZoomIn);
  view->addAction(tr("Zoom &Out"), image, [zoomBy] { zoomBy(-1); })
      ->setShortcut(QKeySequence::ZoomOut);
}

void MainActions::helpMenu(QMenuBar* bar) {
  QMainWindow* w = parts_.window;
  bar->addMenu(tr("&Help"))->addAction(tr("&About"), w, [w] {
    QMessageBox::about(w, tr("About ADT-Tree Studio"),
                       tr("<b>ADT-Tree Studio</b> 0.1<br>Image generation with visual "
                          "autoregressive models, accelerated by speculative decoding on "
                          "adjacency-adaptive draft trees (ADT-Tree).<br><br>Hover the image or a "
                          "map to inspect a token; every knob has a tooltip."));
  });
}

}  // namespace adtree::ui
