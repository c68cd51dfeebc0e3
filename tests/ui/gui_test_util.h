// Helpers shared by the window-level Qt tests (test_gui, test_teaching): bounded waits, choosing a
// method as a user would, and finding the (non-blocking) error dialog the window opens.
#pragma once
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

#include <memory>

#include "ui/panels/heatmap_panel.h"
#include "ui/panels/histogram_panel.h"
#include "ui/panels/history_panel.h"
#include "ui/panels/plot_panel.h"
#include "ui/panels/prompt_edit.h"
#include "ui/panels/queue_panel.h"
#include "ui/panels/replay_panel.h"
#include "ui/panels/settings_panel.h"
#include "ui/views/distribution_view.h"
#include "ui/views/image_view.h"
#include "ui/window/main_window.h"

namespace adtree::testing {

// Bounds, not expectations (a tiny run takes ~1 s). QTRY_* waits twice its timeout again on
// failure to report, so these stay well under QtTest's 300 s per-function watchdog.
constexpr int kLoadMs = 60000;
constexpr int kRunMs = 60000;

// The window's widget (or action) of type T named `name`, as a user's script finds it. A missing
// one stops the test run: a renamed widget must fail the tests, not make them find nothing.
template <class T>
T* child(const QObject& window, const char* name) {
  T* c = window.findChild<T*>(QString::fromLatin1(name));
  if (!c) qFatal("no %s named \"%s\"", T::staticMetaObject.className(), name);
  return c;
}

// A shown window with the model in `dir` loaded and a fixed seed (null if loading timed out).
inline std::unique_ptr<ui::MainWindow> openWindowOn(const QString& dir, int seed) {
  auto w = std::make_unique<ui::MainWindow>();
  w->show();
  QSignalSpy ready(w.get(), &ui::MainWindow::modelReady);
  w->openModel(dir);
  if (!ready.wait(kLoadMs)) return nullptr;
  child<QCheckBox>(*w, "randomSeedBox")->setChecked(false);
  child<QSpinBox>(*w, "seedBox")->setValue(seed);
  return w;
}

inline void selectMethod(ui::MainWindow& w, const QString& key) {
  auto* box = child<QComboBox>(w, "methodBox");
  const int i = box->findData(key);
  QVERIFY(i >= 0);
  box->setCurrentIndex(i);
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
