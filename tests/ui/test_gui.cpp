// The GUI driven as a person would (GUI.md "Tested as a person would"), on the offscreen platform:
// type a prompt, press Generate, wait, check what is on screen; cancel; close mid-run; open a
// broken model directory. Every wait is bounded, so a hang fails instead of blocking CI.
#include <QAbstractItemView>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <random>

#include "decode/settings/method.h"
#include "decode/settings/method_table.h"
#include "decode/settings/setting.h"
#include "gui_test_util.h"
#include "io/safetensors.h"
#include "model/continuous/random_continuous.h"
#include "model/llamagen/gpt_config.h"
#include "model/mar/random_mar.h"
#include "model/random_model.h"
#include "model/text/random_t5.h"
#include "model/text/text_encoder.h"
#include "ui/gallery/run_history.h"
#include "ui/gallery/run_view.h"
#include "ui/panels/heatmap_panel.h"
#include "ui/panels/histogram_panel.h"
#include "ui/panels/plot_panel.h"
#include "ui/panels/prompt_bar.h"
#include "ui/panels/prompt_edit.h"
#include "ui/panels/settings_panel.h"
#include "ui/panels/stall_meter.h"
#include "ui/runs/presets.h"
#include "ui/runs/run_record.h"
#include "ui/views/distribution_view.h"
#include "ui/views/image_view.h"
#include "ui/window/engine_bridge.h"
#include "ui/window/main_window.h"
#include "ui/window/presets_menu.h"
#include "ui/window/text_encoder_menu.h"
#include "util/threads.h"

using adtree::testing::child;
using adtree::testing::kLoadMs;
using adtree::testing::kRunMs;
using adtree::testing::openWindowOn;
using adtree::testing::selectMethod;
using adtree::testing::visibleErrorDialog;
using adtree::ui::MainWindow;
using adtree::ui::RunState;

class GuiTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString tiny_, micro_, corrupt_;

  // A window with `dir` loaded, shown, the seed fixed.
  std::unique_ptr<MainWindow> openWindow(const QString& dir) {
    auto w = openWindowOn(dir, 7);
    if (w)
      child<adtree::ui::PromptEdit>(*w, "promptEdit")
          ->clear();  // the last session's prompt comes back from QSettings
    return w;
  }

  // Types the prompt, presses Generate, waits for the run to end; returns how it ended.
  QString runOnce(MainWindow& w, const QString& prompt) {
    child<adtree::ui::PromptEdit>(w, "promptEdit")->clear();
    QTest::keyClicks(child<adtree::ui::PromptEdit>(w, "promptEdit"), prompt);
    QSignalSpy ended(&w, &MainWindow::generationEnded);
    QTest::mouseClick(child<QPushButton>(w, "generateButton"), Qt::LeftButton);
    if (!ended.wait(kRunMs)) return "timeout";
    return ended.first().first().toString();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    // Settings and the random default model go to a scratch place, not the user's.
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
    // These tests count runs in the history: no pictures from other tests' galleries
    // (tests/ui/test_gallery.cpp tests the gallery).
    QSettings().setValue("gallery/enabled", false);
    tiny_ = tmp_.filePath("tiny");
    micro_ = tmp_.filePath("micro");
    corrupt_ = tmp_.filePath("corrupt");
    auto t = adtree::model::GptConfig::preset("tiny");
    adtree::model::write_random_model(tiny_.toStdString(), t,
                                      adtree::model::small_vq_config(t.vocab_size, t.grid_h), 2,
                                      "gui tiny");
    auto g = adtree::model::GptConfig::preset("micro");
    adtree::model::write_random_model(micro_.toStdString(), g,
                                      adtree::model::small_vq_config(g.vocab_size, g.grid_h), 3,
                                      "gui micro");
    QDir().mkpath(corrupt_);
    QFile f(corrupt_ + "/model.json");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{ \"format\": \"adtree-model\", broken");
  }

  // The random tiny model is made by the app itself when the directory is empty (first start).
  void createsTheRandomDefaultModel() {
    MainWindow w;
    w.show();
    QSignalSpy ready(&w, &MainWindow::modelReady);
    const QString dir = tmp_.filePath("created");
    w.openModel(dir, "tiny");
    QVERIFY(ready.wait(kLoadMs));
    QVERIFY(QFile::exists(dir + "/model.json"));
    QVERIFY(child<QLabel>(w, "randomModelBanner")->isVisible());  // a random model says so
    QVERIFY(child<QLabel>(w, "randomModelBanner")->text().contains("Random model"));
  }

  // The model-family seam in the studio (issue "CSpD"): a continuous model opens, its picker
  // offers AR and CSpD only (the tree and Jacobi methods disabled, with the reason), the top-1 map
  // becomes CSpD's acceptance probability, and a CSpD run fills the picture and the maps.
  void aContinuousModelRunsCspdInTheStudio() {
    const QString dir = tmp_.filePath("continuous");
    adtree::model::write_random_continuous_model(dir.toStdString(), 5);
    auto w = openWindow(dir);
    QVERIFY(w);
    auto* box = child<QComboBox>(*w, "methodBox");
    auto* items = qobject_cast<QStandardItemModel*>(box->model());
    QVERIFY(items);
    for (int i = 0; i < box->count(); ++i) {
      const auto key = box->itemData(i).toString();
      const bool runs = key == "ar" || key == "cspd";
      QCOMPARE(items->item(i)->isEnabled(), runs);
      if (!runs) QVERIFY(box->itemData(i, Qt::ToolTipRole).toString().contains("vectors"));
    }
    // The settings a vector model does not read are off, with the reason; its own are on.
    for (const char* key : {"top_k", "top_p", "cfg_schedule", "cfg_interval"}) {
      auto* editor = child<QWidget>(*w, key);
      QVERIFY2(!editor->isEnabled(), key);
      QVERIFY(editor->toolTip().contains("vectors"));
    }
    QVERIFY(child<QWidget>(*w, "head_variance")->isEnabled());
    QVERIFY(child<QWidget>(*w, "diffusion_steps")->isEnabled());
    // Its CSpD defaults come from its model.json (inner temperature 2, gamma 3).
    QCOMPARE(child<QDoubleSpinBox>(*w, "cspd.inner_temperature")->value(), 2.0);
    QCOMPARE(child<QSpinBox>(*w, "cspd.gamma")->value(), 3);
    selectMethod(*w, "cspd");
    QCOMPARE(runOnce(*w, "w1 w2"), QString("finished"));
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->validCells(), 16);
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->image().size(), QSize(8, 8));
    auto* maps = child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel");
    QCOMPARE(maps->filledCells(RunState::AcceptLen), 16);
    QCOMPARE(maps->filledCells(RunState::Top1), 16);
    // A vector has no codebook distribution: the inspector says so rather than offer traces,
    // and shows no empty chart or candidate table.
    auto* dist = child<adtree::ui::DistributionView>(*w, "distributionView");
    QVERIFY(dist->headline().contains("vectors"));
    QVERIFY(!dist->findChild<QTableWidget*>("candidateTable")->isVisibleTo(dist));
    // Pending cells are painted in their vector's approximate colour, and the help says so.
    QVERIFY(maps->findChild<QLabel*>("hoverInfo")->text().contains("vector's approximate"));
    // CSpD plans no tree: the planned-shape maps are hidden.
    QVERIFY(!maps->findChild<QCustomPlot*>("heatmap" + QString::number(int(RunState::PlanDepth)))
                 ->isVisibleTo(maps));
    QVERIFY(maps->findChild<QCustomPlot*>("heatmap" + QString::number(int(RunState::Top1)))
                ->toolTip()
                .contains("CSpD"));
    // The second histogram is the acceptance per draft position: CSpD's drafts have no rank.
    QVERIFY(child<adtree::ui::HistogramPanel>(*w, "histogramPanel")
                ->rankTitle()
                .contains("draft position"));
    // The run keeps each cell's vector (painted in the model's token colours until the preview),
    // and the hover text shows it with who made it.
    QCOMPARE(w->run().tokenDim(), 4);
    QCOMPARE(w->run().vectors().size(), 16 * 4);
    QVERIFY2(w->run().describeCell(5).contains("vector ("), qPrintable(w->run().describeCell(5)));
    QVERIFY(!w->run().describeCell(5).contains("code"));
    // The history keeps the run's vectors, and its run file carries them back.
    const auto* rec = w->history()->find(w->history()->idAt(0));
    QVERIFY(rec);
    QCOMPARE(rec->vectors.size(), size_t(16 * 4));
    QVERIFY(std::equal(rec->vectors.begin(), rec->vectors.end(), w->run().vectors().begin()));
    const auto back = adtree::ui::recordFromJson(adtree::ui::statsJson(*rec));
    QCOMPARE(back.vectors, rec->vectors);
  }

  // A MAR model (issue "MAR checkpoints") in the studio: its own settings (MAR's iterations, the
  // CFG schedule) are on, a run fills the grid in MAR's random order (the image view shows the
  // decoded cells it was told, the maps every cell), and a replayed step shows only the cells
  // committed by then, wherever they are.
  void aMarModelRunsInItsRandomOrderInTheStudio() {
    const QString dir = tmp_.filePath("mar");
    adtree::model::RandomMarRequest r;
    r.out = dir.toStdString();
    r.draft = "tiny";
    r.seed = 3;
    adtree::model::write_random_mar_model(r);
    auto w = openWindow(dir);
    QVERIFY(w);
    for (const char* key : {"num_iter", "cfg_schedule", "diffusion_steps"})
      QVERIFY2(child<QWidget>(*w, key)->isEnabled(), key);
    QVERIFY(!child<QWidget>(*w, "top_k")->isEnabled());
    for (const char* method : {"ar", "cspd"}) {
      selectMethod(*w, method);
      QCOMPARE(runOnce(*w, "3"), QString("finished"));
      auto* image = child<adtree::ui::ImageView>(*w, "imageView");
      QCOMPARE(image->image().size(), QSize(64, 64));
      auto* maps = child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel");
      QCOMPARE(maps->filledCells(RunState::AcceptLen), 16);
      QVERIFY(!w->run().inOrder());
      QCOMPARE(w->run().commitOrder().size(), 16);
    }
    // Replay the first step: the cells it filled are filled, and no others; the image view shows
    // those cells of the picture.
    auto* view = w->findChild<adtree::ui::RunView*>();
    QVERIFY(view && view->showStep(0));
    const auto& run = w->run();
    const int shown = run.committed();
    QVERIFY(shown > 0 && shown < 16);
    int filled = 0;
    for (int c = 0; c < 16; ++c) filled += run.filled(c) ? 1 : 0;
    QCOMPARE(filled, shown);
    for (int i = 0; i < shown; ++i) QVERIFY(run.filled(run.commitOrder()[i]));
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->validCells(), shown);
  }

  // File > Open Shipped Model lists the models the app ships (the build tree stages them in
  // share/ as an install does) with their descriptions, and opens the one picked.
  void theShippedModelsMenuOpensAShippedModel() {
    auto w = openWindow(tiny_);
    QVERIFY(w);
    auto* menu = w->findChild<QMenu*>("shippedModels");
    QVERIFY(menu);
    QStringList names;
    QAction* emoji = nullptr;
    for (auto* a : menu->actions()) {
      names << a->text();
      if (a->text() == "emoji") emoji = a;
    }
    QVERIFY2(emoji && names.contains("emoji-v3"), qPrintable(names.join(", ")));
    QVERIFY(emoji->toolTip().contains("GPT"));  // its model.json description
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    emoji->trigger();
    QVERIFY(ready.wait(kLoadMs));
    QCOMPARE(QString::fromStdString(w->model()->name), QString("emoji"));
    QVERIFY(!child<QWidget>(*w, "head_variance")->isEnabled());
    // The continuous family's model ships beside it and opens from the same menu, its settings
    // switching to a vector model's (docs/GUI.md).
    QAction* continuous = nullptr;
    for (auto* a : menu->actions())
      if (a->text() == "emoji-continuous") continuous = a;
    QVERIFY2(continuous, qPrintable(names.join(", ")));
    QVERIFY(continuous->toolTip().contains("CSpD"));
    continuous->trigger();
    QVERIFY(ready.wait(kLoadMs));
    QCOMPARE(QString::fromStdString(w->model()->name), QString("emoji-continuous"));
    QVERIFY(child<QWidget>(*w, "head_variance")->isEnabled());
    QVERIFY(!child<QWidget>(*w, "top_k")->isEnabled());
    // Its card's measured CSpD default (training/continuous/card.json).
    QCOMPARE(child<QDoubleSpinBox>(*w, "cspd.inner_temperature")->value(), 200.0);
  }

  void generateFillsImageMapsAndPlots() {
    auto w = openWindow(tiny_);
    QVERIFY(w);
    selectMethod(*w, "ar");
    QVERIFY(!child<QWidget>(*w, "head_variance")->isEnabled());  // a VQ model's tokens are codes
    auto* dist = child<adtree::ui::DistributionView>(*w, "distributionView");
    QVERIFY(dist->findChild<QTableWidget*>("candidateTable")->isVisibleTo(dist));
    auto* vq_maps = child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel");
    QVERIFY(vq_maps->findChild<QCustomPlot*>("heatmap" + QString::number(int(RunState::PlanDepth)))
                ->isVisibleTo(vq_maps));
    auto* app = dynamic_cast<adtree::ui::TimedApplication*>(QCoreApplication::instance());
    if (app) app->startTiming();
    QCOMPARE(runOnce(*w, "a red cat"), QString("finished"));
    const int cells = 16 * 16;
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->validCells(), cells);
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->image().size(), QSize(64, 64));
    for (int m = 0; m < RunState::MapCount; ++m) {
      QCOMPARE(child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->filledCells(RunState::Map(m)),
               cells);
    }
    QCOMPARE(child<adtree::ui::PlotPanel>(*w, "plotPanel")->tokensPerStepPoints(),
             cells);  // AR: one token per step
    QVERIFY(child<adtree::ui::PlotPanel>(*w, "plotPanel")->treeShapePoints() > 0);
    QVERIFY(child<adtree::ui::PlotPanel>(*w, "plotPanel")->speedPoints() > 0);
    QCOMPARE(child<adtree::ui::PlotPanel>(*w, "plotPanel")->histogramBars(),
             1);  // every AR step commits 1 token
    QVERIFY(child<QLabel>(*w, "progressText")->text().contains("τ"));
    QVERIFY(w->shownRecord() && w->shownRecord()->stats);
    QCOMPARE(w->shownRecord()->tokens.size(), size_t(cells));
    QVERIFY(child<QPushButton>(*w, "generateButton")->isEnabled());
    QVERIFY(!child<QPushButton>(*w, "cancelButton")->isEnabled());
    if (app) {
      app->stopTiming();
      // CPU time of the longest GUI event: our own work, immune to a busy machine's scheduling.
      qInfo("longest GUI-thread event: %.1f ms CPU (%.1f ms wall), %s/%d", app->maxEventCpuMs(),
            app->maxEventWallMs(), qPrintable(app->slowestReceiver()), app->slowestEventType());
      QVERIFY2(app->maxEventCpuMs() < 50, "the GUI thread must never work 50 ms at a stretch");
    }
  }

  // PJD commits on several rows per step: the live grid, the maps and the saved run must still
  // hold every cell once, and a run file of it reads back.
  void pjdFillsEveryCellFromSeveralRows() {
    auto w = openWindow(tiny_);
    QVERIFY(w);
    selectMethod(*w, "pjd");
    auto r = child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
                 ->request(adtree::decode::Method::Pjd, adtree::decode::Acceptance::Lossless, 0);
    r.method.pjd.row_offset = 2;
    child<adtree::ui::SettingsPanel>(*w, "settingsPanel")->setRequest(r);
    QCOMPARE(runOnce(*w, "a red cat"), QString("finished"));
    const int cells = 16 * 16;
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->validCells(), cells);
    for (int m = 0; m < RunState::MapCount; ++m) {
      QCOMPARE(child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->filledCells(RunState::Map(m)),
               cells);
    }
    const auto* rec = w->shownRecord();
    QVERIFY(rec && rec->stats);
    QVERIFY2(rec->label.contains("pjd (lossy)"), qPrintable(rec->label));
    QCOMPARE(rec->tokens.size(), size_t(cells));
    for (int c = 0; c < cells; ++c)
      QCOMPARE(qint64(w->run().tokens()[c]), qint64(rec->tokens[size_t(c)]));
    adtree::decode::validate_run(*rec->stats, rec->tokens);
    bool rows = false;
    for (const auto& st : rec->stats->steps) {
      for (auto c : st.cells) rows = rows || c / 16 != st.cells.front() / 16;
    }
    QVERIFY2(rows, "no step committed on two rows");
  }

  void treeMethodFillsTheTreeMaps() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    QVERIFY(w->model()->has_drafter);
    selectMethod(*w, "adt");
    // The tree policy's own maps (N fixed): on this CPU the cost rule may draft little or nothing
    // from a random head; it is run below.
    auto* rule = child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
                     ->findChild<QComboBox*>("adt.budget_rule");
    QVERIFY(rule);
    rule->setCurrentText("fixed");
    const QString how = runOnce(*w, "a red");
    if (how == "failed") {
      auto* box = visibleErrorDialog(w.get());
      const QString why = box ? box->informativeText() : QString();
      QFAIL(qPrintable("ADT-Tree run failed: " + why));
    }
    QCOMPARE(how, QString("finished"));
    const int cells = 4 * 4;
    for (int m = 0; m < RunState::MapCount; ++m) {
      QCOMPARE(child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->filledCells(RunState::Map(m)),
               cells);
    }
    // Cells drafted by a tree show the policy's planned depth, within the default ADT bounds, and
    // the depth of the tree that ran, at most that (a fixed budget drafts no free guesses); 0
    // marks a token sampled outside any tree (the first one, straight from the prefill). Every
    // drafted token of this rule is the head's.
    const auto& planned = w->run().map(RunState::PlanDepth);
    const auto& ran = w->run().map(RunState::TreeDepth);
    const auto& origin = w->run().map(RunState::Origin);
    const auto& accepted = w->run().map(RunState::Depth);
    QString all;
    int from_trees = 0;
    for (int c = 0; c < cells; ++c) {
      const double d = planned[c];
      all += QStringLiteral("%1/%2/%3 ").arg(d).arg(ran[c]).arg(origin[c]);
      from_trees += d > 0 ? 1 : 0;
      QVERIFY2(d == 0 || (d >= 2 && d <= 8), qPrintable(all));
      QVERIFY2(ran[c] <= d, qPrintable(all));
      QVERIFY2(origin[c] == (accepted[c] > 0 ? 1 : 0), qPrintable(all));
    }
    QVERIFY2(from_trees >= cells / 2, qPrintable(all));
    // The cost rule (the default) fills every map too; its trees may be one level deep, and its
    // AR-sized steps leave depth 0.
    rule->setCurrentText("cost");
    // The worth of a guess left for the next step reaches the request and the saved state.
    auto* worth = child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
                      ->findChild<QDoubleSpinBox*>("adt.leftover");
    QVERIFY(worth);
    QCOMPARE(worth->value(), adtree::decode::AdtSettings{}.leftover);
    worth->setValue(0.3);
    const auto req =
        child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
            ->request(adtree::decode::Method::Adt, adtree::decode::Acceptance::Lossless, 1);
    QCOMPARE(req.method.adt.leftover, 0.3);
    const QString saved = child<adtree::ui::SettingsPanel>(*w, "settingsPanel")->saveState();
    worth->setValue(0.0);
    child<adtree::ui::SettingsPanel>(*w, "settingsPanel")->restoreState(saved);
    QCOMPARE(worth->value(), 0.3);
    QCOMPARE(runOnce(*w, "a red"), QString("finished"));
    for (int m = 0; m < RunState::MapCount; ++m) {
      QCOMPARE(child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->filledCells(RunState::Map(m)),
               cells);
    }
    for (double d : w->run().map(RunState::PlanDepth)) QVERIFY(d >= 0 && d <= 8);
    for (double d : w->run().map(RunState::TreeDepth)) QVERIFY(d >= 0 && d <= 16);
  }

  // --set KEY=VALUE (scripted runs, the teaching screenshots): one entry of the table by its key,
  // checked by the entry; a wrong key or value changes nothing and says why.
  void settingsApplyOneEntryByKey() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    selectMethod(*w, "adt");
    auto* panel = child<adtree::ui::SettingsPanel>(*w, "settingsPanel");
    auto* rule = panel->findChild<QComboBox*>("adt.budget_rule");
    QVERIFY(rule);
    QString why;
    QVERIFY2(panel->applySetting("adt.budget_rule", "fixed", &why), qPrintable(why));
    QCOMPARE(rule->currentText(), QString("fixed"));
    QVERIFY(panel->applySetting("temperature", "0.5", &why));
    QCOMPARE(panel->request(adtree::decode::Method::Adt, adtree::decode::Acceptance::Lossless, 1)
                 .sampling.temperature,
             0.5);
    const QString before = panel->saveState();
    QVERIFY(!panel->applySetting("adt.no_such_knob", "1", &why));
    QVERIFY2(!why.isEmpty(), "no reason given");
    QVERIFY(!panel->applySetting("adt.budget_rule", "sometimes", &why));
    QVERIFY2(why.contains("sometimes"), qPrintable(why));
    QVERIFY(!panel->applySetting("dtype", "bf16", &why));  // a model option, not a run setting
    QCOMPARE(panel->saveState(), before);
  }

  // The settings form is made from the settings table: a row per entry with a section, named by
  // its key, with the entry's range (model bounds from the loaded model) and help as its tooltip,
  // greyed where the chosen method does not read it.
  void settingsRowsComeFromTheTable() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    selectMethod(*w, "adt");
    auto* panel = child<adtree::ui::SettingsPanel>(*w, "settingsPanel");
    const adtree::decode::ModelLimits limits{w->model()->codebook_size,
                                             w->model()->grid_h * w->model()->grid_w};
    const auto m =
        panel->request(adtree::decode::Method::Adt, adtree::decode::Acceptance::Lossless, 0).method;
    int rows = 0;
    for (const auto& s : adtree::decode::settings_table()) {
      if (s.section.empty()) continue;
      auto* editor = panel->findChild<QWidget*>(QString::fromStdString(s.key));
      QVERIFY2(editor, s.key.c_str());
      ++rows;
      QVERIFY2(!editor->toolTip().isEmpty(), s.key.c_str());
      QCOMPARE(editor->isEnabled(), s.read_by(m) && s.read_on(adtree::decode::TokenKind::Codes));
      if (auto* spin = qobject_cast<QSpinBox*>(editor)) {
        QCOMPARE(double(spin->minimum()), s.lo);
        if (std::isfinite(s.upper(limits))) QCOMPARE(double(spin->maximum()), s.upper(limits));
      }
    }
    QVERIFY(rows >= 30);
    // A row's value reaches the request through the entry's member.
    auto* beta = panel->findChild<QDoubleSpinBox*>("adt.beta");
    beta->setValue(0.75);
    QCOMPARE(panel->request(adtree::decode::Method::Adt, adtree::decode::Acceptance::Lossless, 0)
                 .method.adt.beta,
             0.75);
    // The step sizes are read in step mode only; the Jacobi section hides for a tree method.
    auto* step_d = panel->findChild<QSpinBox*>("adt.step_d");
    QVERIFY(!step_d->isEnabled());
    panel->findChild<QComboBox*>("adt.mode")->setCurrentText("step");
    QVERIFY(step_d->isEnabled());
    QVERIFY(!panel->findChild<QWidget*>("jacobiSection")->isVisibleTo(panel));
    QVERIFY(panel->findChild<QWidget*>("adtSection")->isVisibleTo(panel));
  }

  void hoverShowsTheCellEverywhere() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    selectMethod(*w, "ar");
    QCOMPARE(runOnce(*w, "a red"), QString("finished"));
    auto* view = child<adtree::ui::ImageView>(*w, "imageView");
    QTest::mouseMove(view, view->rect().center());
    auto* info =
        child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->findChild<QLabel*>("hoverInfo");
    QVERIFY(info);
    QTRY_VERIFY_WITH_TIMEOUT(info->text().contains("Cell (row"), 2000);
    QVERIFY(info->text().contains("top-1 probability"));
  }

  void promptCompletesFromTheVocabulary() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    auto* p = child<adtree::ui::PromptEdit>(*w, "promptEdit");
    p->clear();
    p->setFocus();
    QTest::keyClicks(p, "a re");
    QTRY_VERIFY_WITH_TIMEOUT(p->completer()->popup()->isVisible(), 2000);
    QCOMPARE(p->completer()->currentCompletion(), QString("red"));
    QTest::keyClick(p->completer()->popup(), Qt::Key_Down);  // select the first completion
    QTest::keyClick(p->completer()->popup(), Qt::Key_Return);
    QCOMPARE(p->text(), QString("a red "));
    QTest::keyClicks(p, "xylophone");
    QCOMPARE(p->unknownWords(), QStringList{"xylophone"});
  }

  // A first start on the shipped model: the prompt holds an example it draws well (its card's
  // "Example prompts"), so Generate at once shows the subject; a typed prompt is kept, and a model
  // without the example's words gets no example.
  void promptStartsWithAnExampleTheModelKnows() {
    adtree::engine::ModelInfo emoji;
    emoji.vocabulary = {"apple", "cat", "face", "noto", "red", "twemoji"};
    adtree::ui::PromptBar bar;
    bar.setModel(emoji);
    QCOMPARE(bar.promptText(), QString("cat face noto"));
    auto* edit = bar.findChild<adtree::ui::PromptEdit*>("promptEdit");
    QVERIFY(edit->placeholderText().contains("\"cat face noto\""));
    bar.setPromptText("red apple twemoji");
    bar.setModel(emoji);
    QCOMPARE(bar.promptText(), QString("red apple twemoji"));

    adtree::engine::ModelInfo other;
    other.vocabulary = {"a", "cat", "red"};
    adtree::ui::PromptBar fresh;
    fresh.setModel(other);
    QVERIFY(fresh.promptText().isEmpty());
    QVERIFY(!fresh.findChild<adtree::ui::PromptEdit*>("promptEdit")
                 ->placeholderText()
                 .contains("e.g."));
  }

  void cancelMidRun() {
    auto w = openWindow(tiny_);
    QVERIFY(w);
    selectMethod(*w, "ar");
    QTest::keyClicks(child<adtree::ui::PromptEdit>(*w, "promptEdit"), "a blue dog");
    QSignalSpy ended(w.get(), &MainWindow::generationEnded);
    QTest::keyClick(w.get(), Qt::Key_Return, Qt::ControlModifier);  // Ctrl+Return generates
    QVERIFY(w->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(w->run().committed() >= 10, kRunMs);
    QVERIFY(child<QPushButton>(*w, "cancelButton")->isEnabled());
    QElapsedTimer t;
    t.start();
    QTest::keyClick(w.get(), Qt::Key_Escape);  // Esc cancels
    QVERIFY(ended.wait(kRunMs));
    QCOMPARE(ended.first().first().toString(), QString("cancelled"));
    qInfo("cancel to cancelled on screen: %lld ms", t.elapsed());
    QVERIFY(w->run().committed() < 256);
    QVERIFY(!w->isRunning());
    QVERIFY(child<QPushButton>(*w, "generateButton")->isEnabled());
    // The app keeps working after a cancel.
    QCOMPARE(runOnce(*w, "a red cat"), QString("finished"));
  }

  void closingTheWindowMidRunExitsCleanly() {
    auto w = openWindow(tiny_);
    QVERIFY(w);
    selectMethod(*w, "ar");
    QTest::keyClicks(child<adtree::ui::PromptEdit>(*w, "promptEdit"), "a green tree");
    QTest::mouseClick(child<QPushButton>(*w, "generateButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(w->run().committed() >= 5, kRunMs);
    QElapsedTimer t;
    t.start();
    QVERIFY(w->close());
    w.reset();  // destroys the bridge and the engine: joins the worker mid-job
    QVERIFY2(t.elapsed() < 3000, "closing waits at most about one decoding step");
  }

  // Opening another model mid-run cancels the run (its picture would be meaningless), loads the
  // model, and the next run works on it.
  // The prompt row follows the model: class names with synonyms for c2i, a file picker and a
  // file path for caption-embedding models (converted LlamaGen t2i).
  void promptFollowsTheModelKind() {
    auto c = adtree::model::GptConfig::preset("micro");
    c.cond = adtree::model::CondKind::Class;
    c.num_classes = 20;
    const QString classes = tmp_.filePath("classes");
    adtree::model::write_random_model(classes.toStdString(), c,
                                      adtree::model::small_vq_config(c.vocab_size, c.grid_h), 4,
                                      "gui classes");
    auto w = openWindow(classes);
    QVERIFY(w);
    QVERIFY(!w->findChild<QPushButton*>("promptFileButton")->isVisible());
    QVERIFY(child<adtree::ui::PromptEdit>(*w, "promptEdit")->placeholderText().contains("class"));
    selectMethod(*w, "ar");
    QCOMPARE(runOnce(*w, "7"), QString("finished"));

    auto e = adtree::model::GptConfig::preset("micro");
    e.num_words = 0;
    const QString emb_model = tmp_.filePath("embeddings");
    adtree::model::write_random_model(emb_model.toStdString(), e,
                                      adtree::model::small_vq_config(e.vocab_size, e.grid_h), 5,
                                      "gui embeddings");
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    w->openModel(emb_model);
    QVERIFY(ready.wait(kLoadMs));
    QVERIFY(w->findChild<QPushButton*>("promptFileButton")->isVisible());
    QVERIFY(
        child<adtree::ui::PromptEdit>(*w, "promptEdit")->placeholderText().contains("embedding"));
    const QString file = tmp_.filePath("prompt.safetensors");
    adtree::io::write_safetensors(file.toStdString(),
                                  {{"caption_embedding", at::randn({3, e.cap_dim})},
                                   {"caption_mask", at::ones({3}, at::kLong)}});
    QCOMPARE(runOnce(*w, file), QString("finished"));
    QCOMPARE(w->run().committed(), 16);
    // Words are not a prompt for this model: a clear error, and the window keeps working.
    QCOMPARE(runOnce(*w, "a red cat"), QString("failed"));
    QMessageBox* box = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((box = visibleErrorDialog(w.get())) != nullptr, 2000);
    QVERIFY(box->informativeText().contains("caption-embedding file"));
    box->close();
    QCOMPARE(runOnce(*w, file), QString("finished"));

    // Model > Text Encoder with a T5 of the model's width: the model reloads, words are a prompt,
    // and the status says what encoding them cost.
    const QString t5 = tmp_.filePath("t5");
    adtree::model::write_random_t5(t5.toStdString(), e.cap_dim, 6);
    auto* encoders = w->findChild<adtree::ui::TextEncoderMenu*>();
    QVERIFY(encoders);
    QSignalSpy reloaded(w.get(), &MainWindow::modelReady);
    encoders->setDir(t5);
    QVERIFY(reloaded.wait(kLoadMs));
    QCOMPARE(QString::fromStdString(w->model()->text_encoder), t5);
    QVERIFY(child<adtree::ui::PromptEdit>(*w, "promptEdit")->placeholderText().contains("T5"));
    QCOMPARE(runOnce(*w, "a red cat"), QString("finished"));
    QCOMPARE(w->run().committed(), 16);
    QVERIFY2(w->statusBar()->currentMessage().contains("T5 prompt"),
             qPrintable(w->statusBar()->currentMessage()));
    // The same caption as an embedding file (the encoder's rows for it): the same picture, at the
    // same seed and settings (the window's sampling with shared-noise coupling).
    const QVector<qint64> typed = w->run().tokens();
    const auto rows =
        adtree::model::TextEncoder::load(t5.toStdString())->encode("a red cat", e.cond_len);
    const QString same = tmp_.filePath("a-red-cat.safetensors");
    adtree::io::write_safetensors(
        same.toStdString(), {{"caption_embedding", rows.embedding},
                             {"caption_mask", at::ones({rows.embedding.size(0)}, at::kLong)}});
    QCOMPARE(runOnce(*w, same), QString("finished"));
    QCOMPARE(w->run().tokens(), typed);
    QCOMPARE(runOnce(*w, file), QString("finished"));
    encoders->setDir(QString());  // the next test's windows start without one
  }

  void switchingTheModelMidRunCancelsAndTheNextRunWorks() {
    auto w = openWindow(tiny_);
    QVERIFY(w);
    selectMethod(*w, "ar");
    QTest::keyClicks(child<adtree::ui::PromptEdit>(*w, "promptEdit"), "a red cat");
    QSignalSpy ended(w.get(), &MainWindow::generationEnded);
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    QTest::mouseClick(child<QPushButton>(*w, "generateButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(w->run().committed() >= 5, kRunMs);
    w->openModel(micro_);
    QVERIFY(ended.wait(kRunMs));
    QCOMPARE(ended.first().first().toString(), QString("cancelled"));
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, kLoadMs);
    QCOMPARE(w->model()->grid_h, 4);
    QCOMPARE(runOnce(*w, "a red"), QString("finished"));
    QCOMPARE(w->run().committed(), 16);
  }

  // Generate and cancel 30 times in quick succession, at random moments (some before the first
  // step): every run ends exactly once, the buttons follow, and a last run goes to the end.
  void generateCancelStorm() {
    auto w = openWindow(tiny_);
    QVERIFY(w);
    selectMethod(*w, "adt");
    QTest::keyClicks(child<adtree::ui::PromptEdit>(*w, "promptEdit"), "a red cat");
    std::mt19937 rng(5);
    for (int i = 0; i < 30; ++i) {
      QSignalSpy ended(w.get(), &MainWindow::generationEnded);
      QTest::mouseClick(child<QPushButton>(*w, "generateButton"), Qt::LeftButton);
      QVERIFY(w->isRunning());
      QTest::qWait(int(rng() % 40));
      QTest::keyClick(w.get(), Qt::Key_Escape);
      QVERIFY2(ended.wait(kRunMs), qPrintable(QString("cycle %1 never ended").arg(i)));
      QTest::qWait(5);  // a second terminal event would arrive here
      QCOMPARE(ended.count(), 1);
      QVERIFY(!w->isRunning());
      QVERIFY(child<QPushButton>(*w, "generateButton")->isEnabled());
    }
    QCOMPARE(runOnce(*w, "a blue dog"), QString("finished"));
    QCOMPARE(w->run().committed(), 256);
  }

  void corruptModelShowsAnErrorAndTheAppKeepsWorking() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    QSignalSpy failed(w.get(), &MainWindow::modelLoadFailed);
    w->openModel(corrupt_);
    QVERIFY(failed.wait(kLoadMs));
    QVERIFY(failed.first().first().toString().contains("model.json"));
    QMessageBox* box = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((box = visibleErrorDialog(w.get())) != nullptr, 2000);
    QVERIFY(box->text().contains("could not be opened"));
    QVERIFY(box->informativeText().contains("model.json"));
    box->close();
    QVERIFY(w->hasModel());
    QCOMPARE(QString::fromStdString(w->model()->name), QString("gui micro"));  // the old one stays
    selectMethod(*w, "ar");
    QCOMPARE(runOnce(*w, "a red"), QString("finished"));
  }

  void generationErrorsAreShownNotCrashed() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    selectMethod(*w, "ar");
    QCOMPARE(runOnce(*w, "a purple xylophone"), QString("failed"));
    QMessageBox* box = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((box = visibleErrorDialog(w.get())) != nullptr, 2000);
    QVERIFY(box->informativeText().contains("xylophone"));
    box->close();
    QVERIFY(child<QPushButton>(*w, "generateButton")->isEnabled());
  }

  // PathSpec's own knobs reach the request, and the lossy note shows exactly when the method's row
  // (decode/settings/method_table.cpp) says the request is lossy, in the row's words.
  void pathSpecSettingsAndLossyNote() {
    auto w = openWindow(micro_);
    QVERIFY(w);
    selectMethod(*w, "pathspec");
    auto* panel = child<adtree::ui::SettingsPanel>(*w, "settingsPanel");
    auto* paths = panel->findChild<QSpinBox*>("jacobi.paths");
    auto* length = panel->findChild<QSpinBox*>("jacobi.path_length");
    auto* relax = panel->findChild<QDoubleSpinBox*>("jacobi.path_relax");
    auto* note = panel->findChild<QLabel*>("lossyNote");
    auto* rule = panel->findChild<QComboBox*>("verify");
    QVERIFY(paths && length && relax && note && rule);
    paths->setValue(2);
    length->setValue(9);
    QVERIFY(note->isHidden());  // two chains, coupled (auto): every chain commits AR's tokens
    rule->setCurrentText("sampled");
    QVERIFY(!note->isHidden());  // independent chains: the longest one biases
    QVERIFY(note->text().contains(
        adtree::decode::method_info(adtree::decode::Method::PathSpec).lossy_note));
    rule->setCurrentText("auto");
    auto r =
        panel->request(adtree::decode::Method::PathSpec, adtree::decode::Acceptance::Lossless, 1);
    QCOMPARE(r.method.jacobi.paths, 2);
    QCOMPARE(r.method.jacobi.path_length, 9);
    relax->setValue(0.5);
    QVERIFY(!note->isHidden());  // PathRelax with two chains changes the target's p
    paths->setValue(1);
    QVERIFY(note->isHidden());  // one chain: PathRelax has no other chain to read, SJD's rule
    relax->setValue(0.0);
    QVERIFY(note->isHidden());
    // PJD with several rows is lossy, one row at a time is not.
    selectMethod(*w, "pjd");
    auto* rows = panel->findChild<QSpinBox*>("pjd.max_rows");
    QVERIFY(rows);
    rows->setValue(0);
    QVERIFY(!note->isHidden());
    rows->setValue(1);
    QVERIFY(note->isHidden());
    selectMethod(*w, "pathspec");
    QCOMPARE(runOnce(*w, "a red cat"), QString("finished"));
  }

  void settingsPersistAcrossSessions() {
    {
      auto w = openWindow(micro_);
      QVERIFY(w);
      child<adtree::ui::PromptEdit>(*w, "promptEdit")->setText("a happy sun");
      selectMethod(*w, "sjd");
      child<QSpinBox>(*w, "seedBox")->setValue(1234);
      w->close();
    }
    MainWindow w2;
    QCOMPARE(child<adtree::ui::PromptEdit>(w2, "promptEdit")->text(), QString("a happy sun"));
    QCOMPARE(child<QComboBox>(w2, "methodBox")->currentData().toString(), QString("sjd"));
    QCOMPARE(child<QSpinBox>(w2, "seedBox")->value(), 1234);
    QVERIFY(QSettings().value("model/recent").toStringList().contains(micro_));
  }

  // The acceptance box: CASCADE reaches the run (its label, its thresholds from the panel, the
  // relaxed-accept count), a method without draft trees greys it out and runs lossless, and the
  // next session and a preset keep the choice.
  void relaxedAcceptanceReachesTheRunAndIsRemembered() {
    {
      auto w = openWindow(micro_);
      QVERIFY(w);
      selectMethod(*w, "adt");
      auto* relax = child<QComboBox>(*w, "relaxBox");
      QVERIFY(relax->isEnabled());
      relax->setCurrentIndex(relax->findData("cascade"));
      auto r = child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
                   ->request(adtree::decode::Method::Adt, adtree::decode::Acceptance::Cascade, 0);
      QCOMPARE(r.method.acceptance, adtree::decode::Acceptance::Cascade);
      r.method.cascade.tau_c = 0.3;
      child<adtree::ui::SettingsPanel>(*w, "settingsPanel")->setRequest(r);
      QCOMPARE(runOnce(*w, "a red"), QString("finished"));
      const auto* rec = w->shownRecord();
      QVERIFY(rec);
      QVERIFY2(rec->label.contains("+cascade"), qPrintable(rec->label));
      const auto& ms = rec->stats->settings.request.method;
      QCOMPARE(ms.acceptance, adtree::decode::Acceptance::Cascade);
      QCOMPARE(ms.cascade.tau_c, 0.3);
      QVERIFY(!rec->stats->settings.lossless);
      child<adtree::ui::PresetsMenu>(*w, "presetsMenu")->save("cascade adt");
      selectMethod(*w, "sjd");
      QVERIFY(!relax->isEnabled());
      QCOMPARE(runOnce(*w, "a red"), QString("finished"));
      QVERIFY2(!w->shownRecord()->label.contains("cascade"), qPrintable(w->shownRecord()->label));
      selectMethod(*w, "adt");
      relax->setCurrentIndex(relax->findData("lossless"));
      QVERIFY(child<adtree::ui::PresetsMenu>(*w, "presetsMenu")->apply("cascade adt"));
      QCOMPARE(relax->currentData().toString(), QString("cascade"));
      w->close();
    }
    MainWindow w2;
    QCOMPARE(child<QComboBox>(w2, "relaxBox")->currentData().toString(), QString("cascade"));
    adtree::ui::PresetStore().remove("cascade adt");
  }

  // Edit > Presets: a named method + settings, applied later and after a restart, and deleted.
  void presetsSaveApplyAndSurviveARestart() {
    {
      auto w = openWindow(micro_);
      QVERIFY(w);
      selectMethod(*w, "dynamic");
      auto r =
          child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
              ->request(adtree::decode::Method::Dynamic, adtree::decode::Acceptance::Lossless, 0);
      r.sampling.temperature = 0.7;
      r.method.dynamic_tree.width = 7;
      child<adtree::ui::SettingsPanel>(*w, "settingsPanel")->setRequest(r);
      child<adtree::ui::PresetsMenu>(*w, "presetsMenu")->save("cool dynamic");
      selectMethod(*w, "sjd");
      auto other =
          child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
              ->request(adtree::decode::Method::Sjd, adtree::decode::Acceptance::Lossless, 0);
      other.sampling.temperature = 1.3;
      child<adtree::ui::SettingsPanel>(*w, "settingsPanel")->setRequest(other);
      QVERIFY(child<adtree::ui::PresetsMenu>(*w, "presetsMenu")->apply("cool dynamic"));
      QCOMPARE(child<QComboBox>(*w, "methodBox")->currentData().toString(), QString("dynamic"));
      const auto back =
          child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
              ->request(adtree::decode::Method::Dynamic, adtree::decode::Acceptance::Lossless, 0);
      QCOMPARE(back.sampling.temperature, 0.7);
      QCOMPARE(back.method.dynamic_tree.width, int64_t(7));
      QVERIFY(!child<adtree::ui::PresetsMenu>(*w, "presetsMenu")->apply("no such preset"));
      w->close();
    }
    MainWindow w2;
    QVERIFY(adtree::ui::PresetStore().names().contains("cool dynamic"));
    QVERIFY(child<adtree::ui::PresetsMenu>(w2, "presetsMenu")->apply("cool dynamic"));
    QCOMPARE(child<adtree::ui::SettingsPanel>(w2, "settingsPanel")
                 ->request(adtree::decode::Method::Dynamic, adtree::decode::Acceptance::Lossless, 0)
                 .sampling.temperature,
             0.7);
    adtree::ui::PresetStore().remove("cool dynamic");
    QVERIFY(!adtree::ui::PresetStore().names().contains("cool dynamic"));
  }
};

int main(int argc, char** argv) {
  adtree::configure_threads();  // as adtree-studio does
  // Qt wants the runtime directory to exist and be private; ctest points it into the build tree.
  const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
  if (!runtime.isEmpty()) {
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  }
  adtree::ui::TimedApplication app(argc, argv);
  QApplication::setOrganizationName("adtree-test");
  QApplication::setApplicationName("test-gui");
  GuiTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_gui.moc"
