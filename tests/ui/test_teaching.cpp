// The teaching and research views (compare, replay + draft-tree inspector, token
// distribution, histograms, history, export), driven as a person would on the offscreen platform:
// run, scrub, click cells, restore, save and reopen, export, compare. Every wait is bounded.
#include <QAction>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QGuiApplication>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

#include "decode/settings/method.h"
#include "gui_test_util.h"
#include "model/llamagen/gpt_config.h"
#include "model/random_model.h"
#include "ui/gallery/run_history.h"
#include "ui/panels/heatmap_panel.h"
#include "ui/panels/histogram_panel.h"
#include "ui/panels/history_panel.h"
#include "ui/panels/prompt_edit.h"
#include "ui/panels/replay_panel.h"
#include "ui/panels/settings_panel.h"
#include "ui/views/compare_window.h"
#include "ui/views/distribution_view.h"
#include "ui/views/image_view.h"
#include "ui/views/qcp.h"
#include "ui/views/tree_view.h"
#include "ui/window/exports.h"
#include "ui/window/main_window.h"
#include "util/threads.h"

using adtree::testing::child;
using adtree::testing::closeErrorDialogs;
using adtree::testing::kLoadMs;
using adtree::testing::kRunMs;
using adtree::testing::openWindowOn;
using adtree::testing::selectMethod;
using adtree::testing::visibleErrorDialog;
using adtree::ui::MainWindow;
using adtree::ui::RunState;

class TeachingTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString micro_;

  // The policy's own trees (N fixed): what these lessons show; the cost rule, the default, may
  // draft little on this CPU from the random head (test_gui runs it).
  std::unique_ptr<MainWindow> openWindow() {
    auto w = openWindowOn(micro_, 11);
    auto* rule = w ? child<adtree::ui::SettingsPanel>(*w, "settingsPanel")
                         ->findChild<QComboBox*>("adt.budget_rule")
                   : nullptr;
    if (rule) rule->setCurrentText("fixed");
    return w;
  }

  QString runOnce(MainWindow& w, const QString& method, const QString& prompt = "a red") {
    selectMethod(w, method);
    child<adtree::ui::PromptEdit>(w, "promptEdit")->setText(prompt);
    QSignalSpy ended(&w, &MainWindow::generationEnded);
    QTest::mouseClick(child<QPushButton>(w, "generateButton"), Qt::LeftButton);
    if (!ended.wait(kRunMs)) return "timeout";
    return ended.first().first().toString();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
    // These tests count runs in the history: no pictures from other tests' galleries
    // (tests/ui/test_gallery.cpp tests the gallery).
    QSettings().setValue("gallery/enabled", false);
    micro_ = tmp_.filePath("micro");
    auto g = adtree::model::GptConfig::preset("micro");
    adtree::model::write_random_model(micro_.toStdString(), g,
                                      adtree::model::small_vq_config(g.vocab_size, g.grid_h), 5,
                                      "teaching micro");
  }

  // Scrub the steps with the slider and the keyboard; the image, maps and tree follow.
  void replayScrubsStepsAndDrawsEachTree() {
    auto w = openWindow();
    QVERIFY(w);
    QVERIFY(child<QAction>(*w, "traceAction")->isChecked());  // traces are on by default in the GUI
    QCOMPARE(runOnce(*w, "adt"), QString("finished"));
    auto* replay = child<adtree::ui::ReplayPanel>(*w, "replayPanel");
    const int steps = w->run().steps();
    QVERIFY(steps > 1);
    QCOMPARE(replay->steps(), steps);
    QVERIFY(replay->slider()->isEnabled());
    QCOMPARE(replay->step(), steps - 1);  // a finished run shows its end

    replay->setStep(0);  // the prefill: one token, no tree
    QCOMPARE(w->run().committed(), 1);
    QCOMPARE(child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->filledCells(RunState::Depth), 1);
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->committed(), 1);
    QCOMPARE(replay->treeView()->nodeItems(), 0);
    QVERIFY(replay->treeView()->caption().contains("AR step"));

    replay->setStep(1);  // the first tree: drawn with its nodes, path and ADT's decision
    const auto* rec = w->shownRecord();
    QVERIFY(rec);
    const auto& st = rec->stats->steps[1];
    QCOMPARE(w->run().committed(), int(st.cum_tokens));
    QCOMPARE(child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->filledCells(RunState::Depth),
             int(st.cum_tokens));
    auto* tree = replay->treeView();
    QCOMPARE(tree->nodeItems(), int(st.drafted) + 1);
    QCOMPARE(tree->acceptedItems(),
             int(st.committed) - (rec->stats->traces[1].has_bonus ? 1 : 0) + 1);
    QVERIFY2(tree->caption().contains("ADT"), qPrintable(tree->caption()));
    QVERIFY(tree->caption().contains("initial shape"));
    QVERIFY(!tree->nodeToolTip(1).isEmpty());

    // Keyboard: the slider's arrows, and Alt+Right / Alt+Left anywhere in the window.
    replay->slider()->setFocus();
    QTest::keyClick(replay->slider(), Qt::Key_Right);
    QCOMPARE(replay->step(), 2);
    QTest::keyClick(w.get(), Qt::Key_Left, Qt::AltModifier);
    QCOMPARE(replay->step(), 1);
    QTest::keyClick(replay->slider(), Qt::Key_End);
    QCOMPARE(replay->step(), steps - 1);
    QCOMPARE(w->run().committed(), 16);
    QCOMPARE(child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->filledCells(RunState::Depth), 16);
  }

  // Clicking a cell of the image (or a map) shows the target distribution there.
  void clickingACellShowsItsDistribution() {
    auto w = openWindow();
    QVERIFY(w);
    QCOMPARE(runOnce(*w, "dynamic"), QString("finished"));
    auto* view = child<adtree::ui::ImageView>(*w, "imageView");
    const int cell = 5;  // row 1, col 1 of the 4 x 4 grid
    QTest::mouseClick(view, Qt::LeftButton, {}, view->cellRect(cell).center().toPoint());
    QCOMPARE(w->inspectedCell(), cell);
    auto* dist = child<adtree::ui::DistributionView>(*w, "distributionView");
    QVERIFY(dist->barCount() > 0);
    QVERIFY2(dist->headline().contains("(1, 1)"), qPrintable(dist->headline()));
    const auto* c = w->run().cellTrace(cell);
    QVERIFY(c);
    QCOMPARE(dist->barCount(), int(c->top_tokens.size()));
    QCOMPARE(dist->candidateRows(), int(c->cand_tokens.size()));
    QVERIFY(dist->headline().contains(c->top1 >= 0.5f ? "simple" : "complex"));
    // A map click picks the same cell.
    auto* map = child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")->plot(RunState::Top1);
    QPoint at;
    for (int y = 0; y < map->height() && at.isNull(); y += 2) {
      for (int x = 0; x < map->width(); x += 2) {
        if (child<adtree::ui::HeatmapPanel>(*w, "heatmapPanel")
                ->cellAt(RunState::Top1, QPointF(x, y)) == 10) {
          at = QPoint(x, y);
          break;
        }
      }
    }
    QVERIFY(!at.isNull());
    QTest::mouseClick(map, Qt::LeftButton, {}, at);
    QCOMPARE(w->inspectedCell(), 10);
  }

  // The gallery keeps every run; selecting one restores its picture, maps and replay.
  void historyRestoresEarlierRunsAndFeedsTheHistograms() {
    auto w = openWindow();
    QVERIFY(w);
    QCOMPARE(runOnce(*w, "ar"), QString("finished"));
    const auto first_tokens = w->run().tokens();
    const QImage first_image = child<adtree::ui::ImageView>(*w, "imageView")->image();
    QCOMPARE(runOnce(*w, "adt", "a blue"), QString("finished"));
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 2);
    QCOMPARE(child<adtree::ui::HistogramPanel>(*w, "histogramPanel")->runCount(), 2);
    QVERIFY(child<adtree::ui::HistoryPanel>(*w, "historyPanel")
                ->itemText(0)
                .contains("adt"));               // newest first
    const int first_id = w->history()->idAt(1);  // newest first: the AR run is second
    child<adtree::ui::HistoryPanel>(*w, "historyPanel")->select(first_id);
    QCOMPARE(w->shownRecord()->id, first_id);
    QCOMPARE(w->run().method(), adtree::decode::Method::Ar);
    QCOMPARE(w->run().tokens(), first_tokens);
    QCOMPARE(child<adtree::ui::ImageView>(*w, "imageView")->image(), first_image);
    QCOMPARE(child<adtree::ui::ReplayPanel>(*w, "replayPanel")->steps(),
             16);  // AR: one step per token
    QCOMPARE(child<adtree::ui::HistogramPanel>(*w, "histogramPanel")->currentRun(), first_id);
    QCOMPARE(child<adtree::ui::HistogramPanel>(*w, "histogramPanel")->lengthBars(),
             1);  // AR commits 1 token per step
    QCOMPARE(child<adtree::ui::HistogramPanel>(*w, "histogramPanel")->rankBars(),
             0);  // and accepts no draft token
  }

  // A run saved to one file opens again, with its tokens, picture, steps and trees.
  void runFilesRoundTripAndBadFilesAreRefused() {
    auto w = openWindow();
    QVERIFY(w);
    QCOMPARE(runOnce(*w, "adt"), QString("finished"));
    const auto tokens = w->shownRecord()->tokens;
    const QImage image = w->shownRecord()->image;
    const QString path = tmp_.filePath("one.adtrun.json");
    QVERIFY(w->exports()->runFile(path));
    QVERIFY(w->openRunFile(path));
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 2);
    const auto* back = w->shownRecord();
    QCOMPARE(back->tokens, tokens);
    QCOMPARE(back->image, image);
    QCOMPARE(back->stats->traces.size(), back->stats->steps.size());
    child<adtree::ui::ReplayPanel>(*w, "replayPanel")->setStep(1);
    QVERIFY(child<adtree::ui::ReplayPanel>(*w, "replayPanel")->treeView()->nodeItems() > 1);

    // The CLI's statistics file (no picture) opens too.
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    auto doc = QJsonDocument::fromJson(f.readAll());
    f.close();
    auto obj = doc.object();
    obj.remove("studio");
    const QString cli = tmp_.filePath("cli-stats.json");
    QFile g(cli);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(QJsonDocument(obj).toJson());
    g.close();
    QVERIFY(w->openRunFile(cli));
    QVERIFY(w->shownRecord()->image.isNull());
    QCOMPARE(w->shownRecord()->tokens, tokens);

    // Broken files: a clear error, and nothing in the history changes.
    const int before = child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count();
    const QString bad = tmp_.filePath("bad.adtrun.json");
    QFile b(bad);
    QVERIFY(b.open(QIODevice::WriteOnly));
    b.write("{\"format\": \"adtree-stats\", \"version\": 1, \"truncated");
    b.close();
    QVERIFY(!w->openRunFile(bad));
    auto* box = visibleErrorDialog(w.get());
    QVERIFY(box);
    QVERIFY2(box->informativeText().contains("not valid JSON"), qPrintable(box->informativeText()));
    closeErrorDialogs(w.get());
    obj["tokens"] = QJsonArray{1, 2, 3};
    QFile m(bad);
    QVERIFY(m.open(QIODevice::WriteOnly));
    m.write(QJsonDocument(obj).toJson());
    m.close();
    QVERIFY(!w->openRunFile(bad));
    box = visibleErrorDialog(w.get());
    QVERIFY(box);
    QVERIFY2(box->informativeText().contains("steps and tokens disagree"),
             qPrintable(box->informativeText()));
    closeErrorDialogs(w.get());
    QVERIFY(!w->openRunFile(tmp_.filePath("missing.adtrun.json")));
    closeErrorDialogs(w.get());
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), before);

    // Dropped from a file manager: a run file opens as a run, a directory as a model.
    QVERIFY(w->openDropped(path));
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), before + 1);
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    QVERIFY(w->openDropped(micro_));
    QVERIFY(ready.wait(kLoadMs));
    QVERIFY(!w->openDropped(tmp_.filePath("no-such-thing")));
    QVERIFY(visibleErrorDialog(w.get()));
    closeErrorDialogs(w.get());
  }

  void exportsWriteEveryFile() {
    auto w = openWindow();
    QVERIFY(w);
    QCOMPARE(runOnce(*w, "adt"), QString("finished"));
    QDir out(tmp_.filePath("export"));
    QVERIFY(out.mkpath("."));
    QVERIFY(w->exports()->image(out.filePath("img.png"), 4));
    QImage img(out.filePath("img.png"));
    QCOMPARE(img.size(), child<adtree::ui::ImageView>(*w, "imageView")->image().size() * 4);
    // The exported PNG carries its settings; dropping it restores prompt, seed, method and
    // settings, and the same seed then makes the same picture.
    QVERIFY(img.text("adtree-settings").contains("method_settings"));
    const QVector<qint64> made = w->run().tokens();
    child<adtree::ui::PromptEdit>(*w, "promptEdit")->setText("a blue");
    child<QSpinBox>(*w, "seedBox")->setValue(child<QSpinBox>(*w, "seedBox")->value() + 1);
    child<QComboBox>(*w, "methodBox")
        ->setCurrentIndex(child<QComboBox>(*w, "methodBox")->findData("ar"));
    QVERIFY(w->openDropped(out.filePath("img.png")));
    QCOMPARE(child<QComboBox>(*w, "methodBox")->currentData().toString(), QString("adt"));
    QSignalSpy again(w.get(), &adtree::ui::MainWindow::generationFinished);
    w->generate();
    QVERIFY(again.wait(kRunMs));
    QCOMPARE(w->run().tokens(), made);
    // The switch off: no settings in the file, and dropping it says so instead of guessing.
    child<QAction>(*w, "pngSettingsAction")->setChecked(false);
    QVERIFY(w->exports()->image(out.filePath("plain.png"), 1));
    QVERIFY(QImage(out.filePath("plain.png")).text("adtree-settings").isEmpty());
    QVERIFY(!w->openDropped(out.filePath("plain.png")));
    auto* box = visibleErrorDialog(w.get());
    QVERIFY(box && box->text().contains("carries no ADT-Tree Studio settings"));
    closeErrorDialogs(w.get());
    child<QAction>(*w, "pngSettingsAction")->setChecked(true);
    // Ctrl+C on the picture (Edit > Copy Image) puts it on the clipboard, 4x with crisp pixels.
    QGuiApplication::clipboard()->clear();
    child<adtree::ui::ImageView>(*w, "imageView")->setFocus();
    QTest::keyClick(child<adtree::ui::ImageView>(*w, "imageView"), Qt::Key_C, Qt::ControlModifier);
    const QImage copied = QGuiApplication::clipboard()->image();
    QCOMPARE(copied.size(), child<adtree::ui::ImageView>(*w, "imageView")->image().size() * 4);
    QCOMPARE(copied.convertToFormat(QImage::Format_RGB888),
             img.convertToFormat(QImage::Format_RGB888));
    QVERIFY(w->exports()->maps(out.path(), "run"));
    for (const char* n : {"depth", "top1", "accept-length", "drafted-depth", "drafted-width",
                          "drafted-by", "planned-depth", "planned-width"}) {
      QImage map(out.filePath(QStringLiteral("run-%1.png").arg(n)));
      QVERIFY2(!map.isNull() && map.width() >= 320, n);
    }
    QVERIFY(w->exports()->statsJson(out.filePath("stats.json")));
    QFile js(out.filePath("stats.json"));
    QVERIFY(js.open(QIODevice::ReadOnly));
    const auto stats = QJsonDocument::fromJson(js.readAll()).object();
    QVERIFY(stats.contains("traces"));
    QVERIFY(stats["settings"].toObject().contains("method_settings"));  // reproducible
    QVERIFY(w->exports()->statsCsv(out.filePath("cells.csv")));
    QFile csv(out.filePath("cells.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const auto lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 16);
    QVERIFY(lines[0].startsWith("cell,row,col,token,depth,top1"));
    QCOMPARE(lines[6].split(',').size(), lines[0].split(',').size());
    child<adtree::ui::ReplayPanel>(*w, "replayPanel")->setStep(1);
    QVERIFY(w->exports()->tree(out.filePath("tree.svg")));
    QFile svg(out.filePath("tree.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("<svg"));
    QVERIFY(w->exports()->tree(out.filePath("tree.png")));
    QVERIFY(!QImage(out.filePath("tree.png")).isNull());
    // An unwritable place: a readable error, no crash.
    QVERIFY(!w->exports()->statsCsv("/nonexistent-dir/cells.csv"));
    QVERIFY(visibleErrorDialog(w.get()));
    closeErrorDialogs(w.get());
    QVERIFY(!w->exports()->image("/nonexistent-dir/img.png", 2));
    closeErrorDialogs(w.get());
  }

  // Two configurations side by side; lossless methods at greedy must agree token for token.
  void compareChecksIdentityAndShowsDifferences() {
    auto w = openWindow();
    QVERIFY(w);
    child<adtree::ui::PromptEdit>(*w, "promptEdit")->setText("a red");
    auto* c = w->compareWindow();
    c->show();
    QVERIFY(c->greedyBox()->isChecked());
    c->setSide(0, adtree::decode::Method::Ar, adtree::decode::Acceptance::Lossless);
    c->setSide(1, adtree::decode::Method::Adt, adtree::decode::Acceptance::Lossless);
    QVERIFY(c->runButton()->isEnabled());
    QSignalSpy done(c, &adtree::ui::CompareWindow::comparisonFinished);
    QTest::mouseClick(c->runButton(), Qt::LeftButton);
    QVERIFY(done.wait(kRunMs));
    QCOMPARE(c->differingCells(), 0);
    QVERIFY2(c->identityLabel()->text().contains("Identical tokens"),
             qPrintable(c->identityLabel()->text()));
    QVERIFY(c->speedLabel()->text().contains("speed-up of B over A"));
    QCOMPARE(c->imageView(0)->validCells(), 16);
    QCOMPARE(c->imageView(1)->validCells(), 16);
    QCOMPARE(c->result(0)->tokens, c->result(1)->tokens);

    // Sampling (T = 1) with shared-noise coupling, the default rule: the same seed still gives
    // AR's tokens, and the window owes (and checks) identity.
    QTest::mouseClick(c->greedyBox(), Qt::LeftButton);
    QVERIFY(!c->greedyBox()->isChecked());
    QSignalSpy sampled(c, &adtree::ui::CompareWindow::comparisonFinished);
    QTest::mouseClick(c->runButton(), Qt::LeftButton);
    QVERIFY(sampled.wait(kRunMs));
    QCOMPARE(c->result(0)->tokens, c->result(1)->tokens);
    QVERIFY2(c->identityLabel()->text().contains("Identical tokens") &&
                 c->identityLabel()->text().contains("coupled"),
             qPrintable(c->identityLabel()->text()));
    QTest::mouseClick(c->greedyBox(), Qt::LeftButton);
    QVERIFY(c->greedyBox()->isChecked());

    // Relaxed acceptance on B: no identity promise, the difference map is the evidence instead.
    c->setSide(1, adtree::decode::Method::Adt, adtree::decode::Acceptance::Lantern);
    QSignalSpy again(c, &adtree::ui::CompareWindow::comparisonFinished);
    QTest::mouseClick(c->runButton(), Qt::LeftButton);
    QVERIFY(again.wait(kRunMs));
    QVERIFY(c->result(1)->label.contains("lantern"));
    QVERIFY2(c->identityLabel()->text().contains("No token-identity check"),
             qPrintable(c->identityLabel()->text()));
    QVERIFY(c->differingCells() >= 0);
    c->setSide(1, adtree::decode::Method::Static, adtree::decode::Acceptance::Cascade);
    QSignalSpy cascade(c, &adtree::ui::CompareWindow::comparisonFinished);
    QTest::mouseClick(c->runButton(), Qt::LeftButton);
    QVERIFY(cascade.wait(kRunMs));
    QVERIFY2(c->result(1)->label.contains("static+cascade"), qPrintable(c->result(1)->label));
    QVERIFY(c->identityLabel()->text().contains("No token-identity check"));
    // The main window's runs are untouched by the comparison's jobs.
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 0);
  }

  // With traces off the run still works; the tree and distributions say why they are missing.
  void withoutTracesReplayStillScrubs() {
    auto w = openWindow();
    QVERIFY(w);
    child<QAction>(*w, "traceAction")->setChecked(false);
    QCOMPARE(runOnce(*w, "adt"), QString("finished"));
    QVERIFY(!w->run().hasTraces());
    child<adtree::ui::ReplayPanel>(*w, "replayPanel")->setStep(1);
    QCOMPARE(child<adtree::ui::ReplayPanel>(*w, "replayPanel")->treeView()->nodeItems(), 0);
    QVERIFY(w->run().committed() < 16);
    w->inspectCell(3);
    QCOMPARE(child<adtree::ui::DistributionView>(*w, "distributionView")->barCount(), 0);
  }
};

int main(int argc, char** argv) {
  adtree::configure_threads();
  const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
  if (!runtime.isEmpty()) {
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("adtree-test");
  QApplication::setApplicationName("test-teaching");
  TeachingTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_teaching.moc"
