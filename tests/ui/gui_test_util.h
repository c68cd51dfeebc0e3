// Helpers shared by the window-level Qt tests (test_gui, test_teaching): bounded waits, choosing a
// method as a user would, and finding the (non-blocking) error dialog the window opens.
#pragma once
#include <QCheckBox>
#include <QComboBox>
#include <QMessageBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

#include <memory>

#include "ui/main_window.h"

namespace adtree::testing {

// Bounds, not expectations (a tiny run takes ~1 s). QTRY_* waits twice its timeout again on
// failure to report, so these stay well under QtTest's 300 s per-function watchdog.
constexpr int kLoadMs = 60000;
constexpr int kRunMs = 60000;

// A shown window with the model in `dir` loaded and a fixed seed (null if loading timed out).
inline std::unique_ptr<ui::MainWindow> openWindowOn(const QString& dir, int seed) {
  auto w = std::make_unique<ui::MainWindow>();
  w->show();
  QSignalSpy ready(w.get(), &ui::MainWindow::modelReady);
  w->openModel(dir);
  if (!ready.wait(kLoadMs)) return nullptr;
  w->randomSeedBox()->setChecked(false);
  w->seedBox()->setValue(seed);
  return w;
}

inline void selectMethod(ui::MainWindow& w, const QString& key) {
  const int i = w.methodBox()->findData(key);
  QVERIFY(i >= 0);
  w.methodBox()->setCurrentIndex(i);
}

inline QMessageBox* visibleErrorDialog(QWidget* parent) {
  for (auto* box : parent->findChildren<QMessageBox*>("errorDialog")) {
    if (box->isVisible()) return box;
  }
  return nullptr;
}

inline void closeErrorDialogs(QWidget* parent) {
  for (auto* box : parent->findChildren<QMessageBox*>("errorDialog")) box->close();
}

}  // namespace adtree::testing
