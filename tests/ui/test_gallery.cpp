// The gallery, batches and the queue, driven through the window's widgets on a micro model: what a
// user keeps across restarts, what Delete removes, what a batch and a queue run, and that a killed
// save never leaves a half-written picture under a gallery name.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QDropEvent>
#include <QFile>
#include <QListView>
#include <QMimeData>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <memory>

#include "gui_test_util.h"
#include "model/random_model.h"
#include "ui/gallery/gallery.h"
#include "ui/gallery/gallery_store.h"
#include "ui/gallery/run_history.h"
#include "ui/panels/history_panel.h"
#include "ui/panels/prompt_edit.h"
#include "ui/panels/queue_panel.h"
#include "ui/runs/job_queue.h"
#include "ui/runs/png_settings.h"

using namespace adtree::ui;
using namespace adtree::testing;

class TestGallery : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString micro_;
  int n_ = 0;

  // A fresh gallery folder per test, remembered in the settings as a user's choice would be.
  QString freshGallery() {
    const QString dir = tmp_.filePath(QStringLiteral("gallery%1").arg(++n_));
    QSettings().setValue("gallery/dir", dir);
    QSettings().setValue("gallery/enabled", true);
    QSettings().setValue("gallery/limitMB", 512);
    QSettings().setValue("run/count", 1);
    return dir;
  }

  std::unique_ptr<MainWindow> openWindow() {
    auto w = openWindowOn(micro_, 21);
    if (!w) return nullptr;
    selectMethod(*w, "adt");
    child<adtree::ui::PromptEdit>(*w, "promptEdit")->setText("a red");
    return w;
  }

  static QStringList pictures(const QString& dir) {
    return QDir(dir).entryList({"*.png"}, QDir::Files, QDir::Name);
  }
  static QStringList visibleFiles(const QString& dir) {
    return QDir(dir).entryList(QDir::Files, QDir::Name);  // not the hidden .partial/ folder
  }

  // Clicks Generate and waits for `runs` runs to be finished and saved in the gallery.
  static bool generateAndSave(MainWindow& w, int runs) {
    QSignalSpy saved(&w, &MainWindow::gallerySaved);
    QTest::mouseClick(child<QPushButton>(w, "generateButton"), Qt::LeftButton);
    for (int i = 0; i < 200 && saved.count() < runs; ++i) saved.wait(kRunMs / 100);
    return saved.count() == runs;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
    micro_ = tmp_.filePath("micro");
    auto g = adtree::model::GptConfig::preset("micro");
    adtree::model::write_random_model(micro_.toStdString(), g,
                                      adtree::model::small_vq_config(g.vocab_size, g.grid_h), 5,
                                      "gallery micro");
  }

  // A finished picture is in the gallery folder (picture + run file, the settings inside the
  // PNG), and a new window lists it again and shows it whole.
  void galleryKeepsPicturesAcrossRestarts() {
    const QString dir = freshGallery();
    std::vector<int64_t> tokens;
    {
      auto w = openWindow();
      QVERIFY(w);
      QVERIFY(generateAndSave(*w, 1));
      tokens = w->shownRecord()->tokens;
      QCOMPARE(pictures(dir).size(), 1);
      QCOMPARE(QDir(dir).entryList({"*.adtrun.json"}).size(), 1);
      QString error;
      const auto s = readPngSettings(dir + "/" + pictures(dir).first(), &error);
      QVERIFY2(s, qPrintable(error));
      QCOMPARE(QString::fromStdString((*s)["prompt"].get<std::string>()), QString("a red"));
      QCOMPARE((*s)["seed"].get<int>(), 21);
      QVERIFY(
          QString::fromStdString((*s)["model"]["hash"].get<std::string>()).startsWith("sha256:"));
      w->close();
    }
    auto w = openWindow();
    QVERIFY(w);
    QTRY_COMPARE_WITH_TIMEOUT(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 1,
                              10000);
    QVERIFY(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->itemText(0).contains("a red"));
    // A click on the thumbnail reads the run file back: the same tokens, the replay.
    auto* view = child<adtree::ui::HistoryPanel>(*w, "historyPanel")->view();
    const QRect cell = view->visualRect(w->history()->index(0));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, cell.center());
    QTRY_VERIFY(w->shownRecord() != nullptr);
    QCOMPARE(w->shownRecord()->tokens, tokens);
    QVERIFY(w->shownRecord()->stats->traces.size() > 0);
  }

  // Delete (the key, on the selected thumbnail) removes the entry and both its files.
  void deleteRemovesTheFiles() {
    const QString dir = freshGallery();
    auto w = openWindow();
    QVERIFY(w);
    QVERIFY(generateAndSave(*w, 1));
    QCOMPARE(visibleFiles(dir).size(), 2);
    auto* view = child<adtree::ui::HistoryPanel>(*w, "historyPanel")->view();
    child<adtree::ui::HistoryPanel>(*w, "historyPanel")->setCurrent(w->history()->idAt(0));
    view->setFocus();
    QTest::keyClick(view, Qt::Key_Delete);
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 0);
    QCOMPARE(visibleFiles(dir).size(), 0);
  }

  // Count 3: three pictures with consecutive seeds, three gallery entries; the progress bar says
  // which job of how many is running.
  void batchOfThreeMakesThreeEntriesWithConsecutiveSeeds() {
    const QString dir = freshGallery();
    auto w = openWindow();
    QVERIFY(w);
    child<QSpinBox>(*w, "countBox")->setValue(3);
    QStringList formats;  // the progress bar's text as each job ends
    connect(w.get(), &MainWindow::generationEnded, w.get(),
            [&] { formats << child<QProgressBar>(*w, "progressBar")->format(); });
    QVERIFY(generateAndSave(*w, 3));
    QCOMPARE(pictures(dir).size(), 3);
    QList<quint64> seeds;
    for (int row = 0; row < 3; ++row) seeds << w->history()->find(w->history()->idAt(row))->seed;
    QCOMPARE(seeds, (QList<quint64>{23, 22, 21}));  // newest first
    QCOMPARE(formats.size(), 3);
    QVERIFY2(formats[0].contains("job 1 of 3") && formats[1].contains("job 2 of 3"),
             qPrintable(formats.join(" | ")));
    // In the files too: the seed is in every picture's name and settings.
    for (const auto& p : pictures(dir)) QVERIFY(p.contains("seed2"));
  }

  // Generate twice while a job runs: the queue shows them; one cancelled before it starts never
  // runs; Move Up changes which runs first.
  void queuedJobsCanBeCancelledAndReordered() {
    freshGallery();
    auto w = openWindow();
    QVERIFY(w);
    child<QSpinBox>(*w, "countBox")->setValue(3);
    QSignalSpy ended(w.get(), &MainWindow::generationEnded);
    QTest::mouseClick(child<QPushButton>(*w, "generateButton"),
                      Qt::LeftButton);  // seeds 21 (runs), 22, 23 wait
    QCOMPARE(w->queue()->pending(), 2);
    auto* panel = child<adtree::ui::QueuePanel>(*w, "queuePanel");
    // Rows: 0 running (21), 1 = 22, 2 = 23. Move 23 up, then cancel 22 (now row 2).
    panel->selectRow(2);
    QTest::mouseClick(panel->upButton(), Qt::LeftButton);
    QCOMPARE(w->queue()->pendingAt(0).seed, quint64(23));
    panel->selectRow(2);
    QTest::mouseClick(panel->cancelButton(), Qt::LeftButton);
    QCOMPARE(w->queue()->pending(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 2, kRunMs);
    QTest::qWait(1500);  // a cancelled job that ran anyway would end here
    QCOMPARE(ended.count(), 2);
    QCOMPARE(w->queue()->rowCount(), 0);
    QCOMPARE(w->history()->find(w->history()->idAt(0))->seed, quint64(23));
    QCOMPARE(w->history()->find(w->history()->idAt(1))->seed, quint64(21));
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 2);
  }

  // Past the size limit the oldest pictures go first, the newest always stays, and it is said.
  void sizeCapRemovesTheOldestFirst() {
    const QString dir = freshGallery();
    auto w = openWindow();
    QVERIFY(w);
    QVERIFY(generateAndSave(*w, 1));
    const QString first = pictures(dir).first();
    w->gallery()->setMaxBytes(1);  // smaller than any picture: only the newest can stay
    child<QSpinBox>(*w, "seedBox")->setValue(30);
    QVERIFY(generateAndSave(*w, 1));
    QCOMPARE(pictures(dir).size(), 1);
    QVERIFY(pictures(dir).first() != first);
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 1);
  }

  // A PNG from the gallery dropped on the window restores prompt, seed, method and settings;
  // Generate then makes the same tokens.
  void droppedPngRestoresSettingsAndRegenerates() {
    const QString dir = freshGallery();
    auto w = openWindow();
    QVERIFY(w);
    selectMethod(*w, "dynamic");
    QVERIFY(generateAndSave(*w, 1));
    const auto tokens = w->shownRecord()->tokens;
    selectMethod(*w, "ar");
    child<adtree::ui::PromptEdit>(*w, "promptEdit")->setText("something else");
    child<QSpinBox>(*w, "seedBox")->setValue(99);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(dir + "/" + pictures(dir).first())});
    QDragEnterEvent enter(QPoint(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, {});
    QApplication::sendEvent(w.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, {});
    QApplication::sendEvent(w.get(), &drop);
    QCOMPARE(child<adtree::ui::PromptEdit>(*w, "promptEdit")->text(), QString("a red"));
    QCOMPARE(child<QSpinBox>(*w, "seedBox")->value(), 21);
    QCOMPARE(child<QComboBox>(*w, "methodBox")->currentData().toString(), QString("dynamic"));
    QVERIFY(generateAndSave(*w, 1));
    QCOMPARE(w->shownRecord()->tokens, tokens);
  }

  // A gallery that cannot be written (here its folder would have to live inside a regular file,
  // which fails even for root; a full disk takes the same path): one error dialog naming the
  // folder, and the run stays in the session's history, whole.
  void unwritableGalleryIsAnErrorAndLosesNothing() {
    QFile blocker(tmp_.filePath("not-a-folder"));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    QSettings().setValue("gallery/dir", blocker.fileName() + "/gallery");
    QSettings().setValue("gallery/enabled", true);
    auto w = openWindow();
    QVERIFY(w);
    QSignalSpy ended(w.get(), &MainWindow::generationEnded);
    QTest::mouseClick(child<QPushButton>(*w, "generateButton"), Qt::LeftButton);
    QVERIFY(ended.wait(kRunMs));
    QTRY_VERIFY_WITH_TIMEOUT(visibleErrorDialog(w.get()) != nullptr, 10000);
    auto* box = visibleErrorDialog(w.get());
    QVERIFY(box->text().contains("not-a-folder"));
    QCOMPARE(child<adtree::ui::HistoryPanel>(*w, "historyPanel")->count(), 1);
    QVERIFY(w->shownRecord() && w->shownRecord()->stats);
    QVERIFY(w->history()->galleryBase(w->history()->idAt(0)).isEmpty());
    closeErrorDialogs(w.get());
  }

  // A batch whose prompt the model does not know: one failure, one dialog, the rest of the batch
  // out of the queue (not five dialogs); a batch queued behind it still runs.
  void aFailedBatchFailsOnce() {
    freshGallery();
    auto w = openWindow();
    QVERIFY(w);
    child<adtree::ui::PromptEdit>(*w, "promptEdit")->setText("a zebraword");
    child<QSpinBox>(*w, "countBox")->setValue(5);
    QSignalSpy ended(w.get(), &MainWindow::generationEnded);
    QTest::mouseClick(child<QPushButton>(*w, "generateButton"), Qt::LeftButton);
    child<adtree::ui::PromptEdit>(*w, "promptEdit")->setText("a red");
    child<QSpinBox>(*w, "countBox")->setValue(1);
    QTest::mouseClick(child<QPushButton>(*w, "generateButton"),
                      Qt::LeftButton);  // queued behind the batch
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 2, kRunMs);
    QTest::qWait(500);
    QCOMPARE(ended.count(), 2);
    QCOMPARE(ended[0][0].toString(), QString("failed"));
    QCOMPARE(ended[1][0].toString(), QString("finished"));
    QCOMPARE(w->findChildren<QMessageBox*>("errorDialog").size(), 1);
    QVERIFY(visibleErrorDialog(w.get())->text().contains("4 other picture"));
    QVERIFY(visibleErrorDialog(w.get())->informativeText().contains("zebraword"));
    closeErrorDialogs(w.get());
  }

  // Both item models keep Qt's model contract through every edit (QAbstractItemModelTester
  // checks each signal against the rows before and after): the queue's enqueue, start, cancel,
  // move in both directions and clear, the history's add, stored entries, remove.
  void modelsKeepTheQtModelContract() {
    JobQueue q;
    QAbstractItemModelTester qt(&q, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QList<int> tickets;
    for (int i = 0; i < 5; ++i) {
      QueuedJob j;
      j.prompt = QStringLiteral("p%1").arg(i);
      j.method = adtree::decode::Method::Adt;
      j.seed = quint64(i);
      tickets << q.enqueue(j);
    }
    QVERIFY(q.startNext());
    QCOMPARE(q.rowCount(), 5);         // running + 4 waiting
    QVERIFY(q.move(tickets[4], -2));   // 1 2 3 4 -> 1 4 2 3
    QVERIFY(q.move(tickets[1], +1));   // -> 4 1 2 3
    QVERIFY(q.move(tickets[3], -10));  // clamped: -> 3 4 1 2
    QList<quint64> order;
    for (int i = 0; i < q.pending(); ++i) order << q.pendingAt(i).seed;
    QCOMPARE(order, (QList<quint64>{3, 4, 1, 2}));
    QVERIFY(q.cancel(tickets[4]));
    QVERIFY(!q.cancel(tickets[0]));  // the running one is not cancelled from the queue
    QVERIFY(q.index(0).data().toString().startsWith("▶ running"));
    QVERIFY(q.index(1).data().toString().contains("“p3”"));
    q.finishRunning();
    QCOMPARE(q.total(), 4);  // the one begun and the three waiting: "job 1 of 4"
    q.clearPending();
    QCOMPARE(q.rowCount(), 0);

    RunHistory h;
    QAbstractItemModelTester ht(&h, QAbstractItemModelTester::FailureReportingMode::QtTest);
    GalleryStore::Entry e;
    e.base = tmp_.filePath("none/20260101-000000-000-seed1");
    e.settings = {{"prompt", "old"}, {"seed", 1}, {"result", {{"tau", 2.5}}}};
    const int stored = h.addStored(e);
    QCOMPARE(h.rowCount(), 1);
    QVERIFY(h.index(0).data().toString().contains("τ 2.50"));
    QCOMPARE(h.idOfGalleryBase(e.base), stored);
    QVERIFY(h.remove(stored));
    QCOMPARE(h.rowCount(), 0);
  }

  // The studio killed in the middle of writing a gallery file (SIGKILL, as the power going or
  // `kill -9`): no half-written file under a gallery name, and the next start clears the rest.
  void killedMidSaveLeavesNothingHalfWritten() {
    const QString dir = tmp_.filePath("killed");
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("ADTREE_TEST_KILL_DURING_GALLERY_SAVE", "1");
    env.insert("QT_QPA_PLATFORM", "offscreen");
    p.setProcessEnvironment(env);
    p.start(ADTREE_STUDIO_EXE, {"--run", "a red", "--gallery", dir, micro_});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);  // it died in the save, as intended
    QVERIFY(QDir(dir + "/.partial").exists());      // with a half-written file there
    QCOMPARE(visibleFiles(dir), QStringList());     // and nothing under a gallery name
    GalleryStore store(dir);
    QCOMPARE(store.list().size(), 0);
    QVERIFY(!QDir(dir + "/.partial").exists());
  }
};

QTEST_MAIN(TestGallery)
#include "test_gallery.moc"
