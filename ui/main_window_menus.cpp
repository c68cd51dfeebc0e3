// MainWindow's menus and the commands that live only there (recent models, presets, gallery
// options): the wiring of actions, kept apart from the window's layout and run handling.
#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>

#include "ui/compare_window.h"
#include "ui/device_menu.h"
#include "ui/error_dialog.h"
#include "ui/exports.h"
#include "ui/gallery_menu.h"
#include "ui/image_view.h"
#include "ui/main_window.h"
#include "ui/model_card.h"
#include "ui/presets.h"
#include "ui/presets_menu.h"
#include "ui/prompt_bar.h"
#include "ui/recent_models.h"
#include "ui/replay_panel.h"
#include "ui/run_library.h"
#include "ui/run_view.h"
#include "ui/settings_panel.h"

namespace adtree::ui {

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
  recent_ = new RecentModels(file->addMenu(tr("Open &Recent")), this);
  connect(recent_, &RecentModels::openRequested, this, [this](const QString& d) { openModel(d); });
  file->addSeparator();
  file->addAction(tr("Open R&un…"), this,
                  [this] {
                    const QString path =
                        QFileDialog::getOpenFileName(this, tr("Open a run"), QDir::homePath(),
                                                     tr("ADT-Tree runs (*.adtrun.json *.json)"));
                    if (!path.isEmpty()) openRunFile(path);
                  })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  act_save_run_ = file->addAction(tr("Save Ru&n…"), this, [this] {
    if (const auto* r = shownRecord()) exports_->askRunFile(*r);
  });
  act_save_run_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
  act_save_run_->setToolTip(
      tr("One file with the settings, tokens, per-step records, trees and the "
         "picture: reopen it here, share it, or reproduce it from its settings"));
  auto* exp = file->addMenu(tr("&Export"));
  act_save_image_ = exp->addAction(tr("&Image as PNG…"), this, [this] {
    exports_->askImage(view_->picture(), shownRecord(), act_png_settings_->isChecked());
  });
  act_save_image_->setShortcut(QKeySequence::Save);
  act_save_maps_ = exp->addAction(tr("&Maps as PNG…"), this,
                                  [this] { exports_->askMaps(view_->heatmaps(), shownRecord()); });
  act_save_stats_ = exp->addAction(tr("Statistics as &JSON…"), this, [this] {
    if (const auto* r = shownRecord()) exports_->askStatsJson(*r);
  });
  act_save_csv_ = exp->addAction(tr("Statistics as &CSV…"), this, [this] {
    if (const auto* r = shownRecord()) exports_->askStatsCsv(*r);
  });
  act_save_tree_ = exp->addAction(tr("Draft &Tree as SVG or PNG…"), this, [this] {
    exports_->askTree(replay_->treeView(), replay_->step());
  });
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  auto* edit = menuBar()->addMenu(tr("&Edit"));
  act_copy_image_ = edit->addAction(tr("&Copy Image"), this, [this] { copyImage(); });
  act_copy_image_->setShortcut(QKeySequence::Copy);  // a focused text field keeps Ctrl+C for text
  act_copy_image_->setToolTip(tr("Copy the picture, upscaled 4x with crisp pixels"));
  act_png_settings_ = edit->addAction(tr("Write Settings into &Exported PNGs"));
  act_png_settings_->setObjectName("pngSettingsAction");
  act_png_settings_->setCheckable(true);
  act_png_settings_->setToolTip(
      tr("Keep the prompt, seed and every setting inside exported "
         "pictures; drop such a picture on the window to restore them"));
  edit->addSeparator();
  edit->addAction(tr("Save Settings as &Preset…"), this, [this] {
    bool ok = false;
    const QString name =
        QInputDialog::getText(this, tr("Save preset"), tr("Name for the method and its settings:"),
                              QLineEdit::Normal, bar_->methodLabel(), &ok)
            .trimmed();
    if (ok && !name.isEmpty()) savePreset(name);
  });
  connect(new PresetsMenu(edit->addMenu(tr("P&resets")), this), &PresetsMenu::applyRequested, this,
          &MainWindow::applyPreset);

  auto* run = menuBar()->addMenu(tr("&Run"));
  act_generate_ = run->addAction(tr("&Generate"), this, &MainWindow::generate);
  act_generate_->setShortcuts(
      {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
  act_cancel_ = run->addAction(tr("&Cancel"), this, &MainWindow::cancel);
  act_cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
  run->addSeparator();
  run->addAction(tr("C&ompare Two Configurations…"), this,
                 [this] {
                   auto* c = compareWindow();
                   c->show();
                   c->raise();
                   c->activateWindow();
                 })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
  act_trace_ = run->addAction(tr("Record Step &Traces"));
  act_trace_->setObjectName("traceAction");
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
  devices_ = new DeviceMenu(model, this);
  connect(devices_, &DeviceMenu::changed, this, [this] {
    if (model_) openModel(QString::fromStdString(model_->dir));
  });
  model->addSeparator();
  model->addAction(tr("Model &Card…"), this, [this] {
    if (model_) {
      showModelCard(this, *model_);
    } else {
      showError(this, tr("No model"), tr("No model is loaded."));
    }
  });
  model->addAction(tr("Open the &Default Model"), this, &MainWindow::openDefaultModel);

  auto* view = menuBar()->addMenu(tr("&View"));
  auto* toggle = settings_dock_->toggleViewAction();
  toggle->setText(tr("&Settings Panel"));
  toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
  view->addAction(toggle);
  for (auto* d : {replay_dock_, inspector_dock_, histogram_dock_, history_dock_, queue_dock_}) {
    view->addAction(d->toggleViewAction());
  }
  gallery_menu_ = new GalleryMenu(view->addMenu(tr("&Gallery")), library_, this);
  view->addSeparator();
  ImageView* image = view_->image();
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

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About ADT-Tree Studio"),
                       tr("<b>ADT-Tree Studio</b> 0.1<br>Image generation with visual "
                          "autoregressive models, accelerated by speculative decoding on "
                          "adjacency-adaptive draft trees (ADT-Tree).<br><br>Hover the image or a "
                          "map to inspect a token; every knob has a tooltip."));
  });
}

void MainWindow::savePreset(const QString& name) {
  PresetStore().save(name, Preset{bar_->methodKey(), bar_->relaxKey(), settings_->saveState()});
  status(tr("Saved the preset “%1”").arg(name), 3000);
}

bool MainWindow::applyPreset(const QString& name) {
  const auto p = PresetStore().load(name);
  if (!p || !bar_->setMethodKey(p->method)) {
    status(tr("The preset “%1” cannot be read").arg(name), 5000);
    return false;
  }
  bar_->setRelaxKey(p->relax);
  settings_->restoreState(p->settings);
  status(tr("Applied the preset “%1”").arg(name), 3000);
  return true;
}

}  // namespace adtree::ui
