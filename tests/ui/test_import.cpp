// File > Import Checkpoint driven through the window (issue "Real checkpoints without Python",
// part 3): a LlamaGen checkpoint written by Debian's python3-torch (tests/llamagen/reference.py;
// skipped without it) is dropped on the window, the dialog shows what it recognised and what it
// needs (the heads and the grid of a model whose name says neither), finds the VQ beside it,
// converts on a worker thread and opens the model; it is listed under Model > Recent Imports.
// Cancel leaves nothing behind.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

#include "gui_test_util.h"
#include "ui/window/import_dialog.h"
#include "ui/window/main_window.h"

using adtree::testing::kLoadMs;
using adtree::ui::ImportDialog;
using adtree::ui::MainWindow;

class ImportTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString ref_;  // the reference's checkpoint folder: gpt.pt, vq.pt

  ImportDialog* dialogOf(MainWindow& w) {
    ImportDialog* d = nullptr;
    if (!QTest::qWaitFor([&] { return (d = w.findChild<ImportDialog*>()) && d->isVisible(); },
                         5000))
      return nullptr;
    return d;
  }

  // The fixture's checkpoint names neither its heads nor its grid: the first reading says so,
  // and with them given the second understands it. False if a reading does not come.
  bool giveHeadsAndGrid(ImportDialog* d, QString* first = nullptr, bool* couldImport = nullptr) {
    QSignalSpy inspected(d, &ImportDialog::inspected);
    if (!inspected.wait(20000)) return false;
    if (first) *first = d->recognised();
    if (couldImport) *couldImport = d->canImport();
    d->setHeads(4);
    d->setGrid(4);
    return inspected.wait(20000);
  }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
    QSettings().setValue("gallery/enabled", false);
    QProcess py;
    py.start("/usr/bin/python3", {"-c", "import torch"});
    if (!py.waitForFinished(60000) || py.exitCode() != 0)
      QSKIP("/usr/bin/python3 has no torch (apt install python3-torch)");
    ref_ = tmp_.filePath("ref");
    QProcess make;
    make.setWorkingDirectory(ADTREE_SOURCE_DIR);
    make.start("/usr/bin/python3", {"tests/llamagen/reference.py", "--out", ref_, "--kind", "c2i"});
    QVERIFY(make.waitForFinished(120000));
    QCOMPARE(make.exitCode(), 0);
  }

  void droppedCheckpointImportsAndOpens() {
    MainWindow w;
    w.show();
    QVERIFY(w.openDropped(ref_ + "/gpt.pt"));
    ImportDialog* d = dialogOf(w);
    QVERIFY(d);
    QString first;
    bool couldImport = true;
    QVERIFY(giveHeadsAndGrid(d, &first, &couldImport));
    // Its name (gpt) says neither the heads nor the image size: the dialog asked for them.
    QVERIFY2(first.contains("attention heads"), qPrintable(first));
    QVERIFY(!couldImport);
    QVERIFY2(d->recognised().contains("class-to-image GPT: 2 layers x 4 heads"),
             qPrintable(d->recognised()));
    QVERIFY2(d->recognised().contains("VQ tokenizer: "), qPrintable(d->recognised()));
    const QString out = tmp_.filePath("imported");
    d->setOutput(out);
    QVERIFY(d->canImport());
    QSignalSpy ready(&w, &MainWindow::modelReady);
    d->startImport();
    QVERIFY(ready.wait(kLoadMs));
    QVERIFY(QFile::exists(out + "/vq.safetensors"));  // the VQ beside the checkpoint was found
    QVERIFY(w.model());
    QCOMPARE(QString::fromStdString(w.model()->dir), out);
    QCOMPARE(QSettings().value("model/recentImports").toStringList().value(0), out);

    // The same folder again: it holds files now, so the dialog will not write there.
    w.importCheckpoint(ref_ + "/gpt.pt");
    QTRY_VERIFY_WITH_TIMEOUT(w.findChildren<ImportDialog*>().size() == 1, 5000);
    ImportDialog* again = w.findChildren<ImportDialog*>().first();
    again->setOutput(out);
    QVERIFY(!again->canImport());
  }

  void cancelLeavesNothing() {
    MainWindow w;
    w.show();
    w.importCheckpoint(ref_ + "/gpt.pt");
    ImportDialog* d = dialogOf(w);
    QVERIFY(d);
    QVERIFY(giveHeadsAndGrid(d));
    const QString out = tmp_.filePath("cancelled");
    d->setOutput(out);
    QPointer<ImportDialog> alive(d);
    d->startImport();
    d->reject();  // Cancel at once: the conversion stops at its next stage and the dialog closes
    QTRY_VERIFY_WITH_TIMEOUT(!alive || !alive->isVisible(), 20000);
    QTest::qWait(200);
    QVERIFY(!QDir(out).exists() || QFile::exists(out + "/model.json"));  // all or nothing
    for (const QString& e : QDir(tmp_.path()).entryList(QDir::AllEntries | QDir::Hidden))
      QVERIFY2(!e.contains(".converting"), qPrintable(e));
  }

  void aFileThatIsNoCheckpointSaysSo() {
    MainWindow w;
    w.show();
    w.importCheckpoint(ref_ + "/meta.json");
    ImportDialog* d = dialogOf(w);
    QVERIFY(d);
    QSignalSpy inspected(d, &ImportDialog::inspected);
    QVERIFY(inspected.wait(20000));
    QVERIFY2(d->recognised().contains("not a torch.save() checkpoint"),
             qPrintable(d->recognised()));
    QVERIFY(!d->canImport());
  }
};

QTEST_MAIN(ImportTest)
#include "test_import.moc"
