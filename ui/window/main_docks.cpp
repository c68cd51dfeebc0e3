#include "ui/window/main_docks.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>

#include "ui/panels/histogram_panel.h"
#include "ui/panels/history_panel.h"
#include "ui/panels/queue_panel.h"
#include "ui/panels/replay_panel.h"
#include "ui/panels/settings_panel.h"
#include "ui/views/distribution_view.h"

namespace adtree::ui {

namespace {
QDockWidget* addDock(QMainWindow* window, const QString& title, const QString& name, QWidget* w,
                     Qt::DockWidgetArea area) {
  auto* d = new QDockWidget(title, window);
  d->setObjectName(name);
  d->setWidget(w);
  d->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable |
                 QDockWidget::DockWidgetFloatable);
  window->addDockWidget(area, d);
  return d;
}
}  // namespace

MainDocks MainDocks::build(QMainWindow* window, RunHistory* history, JobQueue* queue) {
  MainDocks d;
  d.settings = new SettingsPanel;
  d.settings->setObjectName("settingsPanel");  // the compare window has two more, unnamed
  d.settingsDock = addDock(window, QObject::tr("Settings"), "settingsDock",
                           d.settings->inScrollArea(), Qt::LeftDockWidgetArea);
  // The teaching and research views: docks, so a class can show just the replay and the tree,
  // and a researcher can float the inspector next to the maps.
  d.replay = new ReplayPanel;
  d.replayDock = addDock(window, QObject::tr("Replay and draft tree"), "replayDock", d.replay,
                         Qt::BottomDockWidgetArea);
  d.inspector = new DistributionView;
  d.inspectorDock = addDock(window, QObject::tr("Token distribution"), "inspectorDock", d.inspector,
                            Qt::BottomDockWidgetArea);
  window->splitDockWidget(d.replayDock, d.inspectorDock, Qt::Horizontal);
  d.histograms = new HistogramPanel;
  d.histogramDock = addDock(window, QObject::tr("Acceptance histograms"), "histogramDock",
                            d.histograms, Qt::BottomDockWidgetArea);
  d.history = new HistoryPanel(history);
  d.historyDock = addDock(window, QObject::tr("History and gallery"), "historyDock", d.history,
                          Qt::BottomDockWidgetArea);
  d.queue = new QueuePanel(queue);
  d.queueDock =
      addDock(window, QObject::tr("Queue"), "queueDock", d.queue, Qt::BottomDockWidgetArea);
  window->tabifyDockWidget(d.inspectorDock, d.histogramDock);
  window->tabifyDockWidget(d.histogramDock, d.historyDock);
  window->tabifyDockWidget(d.historyDock, d.queueDock);
  d.inspectorDock->raise();
  return d;
}

bool MainDocks::raise(const QString& name) const {
  QDockWidget* d = name == "inspector"    ? inspectorDock
                   : name == "histograms" ? histogramDock
                   : name == "history"    ? historyDock
                   : name == "queue"      ? queueDock
                   : name == "replay"     ? replayDock
                   : name == "settings"   ? settingsDock
                                          : nullptr;
  if (!d) return false;
  d->show();
  d->raise();
  return true;
}

QList<QAction*> MainDocks::toggleActions() const {
  auto* settingsToggle = settingsDock->toggleViewAction();
  settingsToggle->setText(QMainWindow::QObject::tr("&Settings Panel"));
  settingsToggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
  QList<QAction*> all{settingsToggle};
  for (auto* d : {replayDock, inspectorDock, histogramDock, historyDock, queueDock}) {
    all << d->toggleViewAction();
  }
  return all;
}

void MainDocks::sizeForFirstShow(QMainWindow* window) const {
  const int w = window->width(), h = window->height();
  window->resizeDocks({replayDock, inspectorDock}, {w * 55 / 100, w * 45 / 100}, Qt::Horizontal);
  window->resizeDocks({replayDock}, {std::max(220, h * 30 / 100)}, Qt::Vertical);
}

}  // namespace adtree::ui
