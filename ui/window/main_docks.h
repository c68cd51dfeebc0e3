// MainDocks: the main window's docked panels (GUI.md "Beyond a single run") and where they sit.
// Settings on the left; under the maps the replay strip and, beside it, the inspector, histograms,
// history and queue as tabs, so the image and maps keep the window's full width. The window wires
// the panels; this knows only their places, their names and their first sizes.
#pragma once
#include <QList>
#include <QString>

class QAction;
class QDockWidget;
class QMainWindow;

namespace adtree::ui {

class DistributionView;
class HistogramPanel;
class HistoryPanel;
class JobQueue;
class QueuePanel;
class ReplayPanel;
class RunHistory;
class SettingsPanel;

struct MainDocks {
  // Makes the panels and docks them into `window`.
  static MainDocks build(QMainWindow* window, RunHistory* history, JobQueue* queue);

  // Shows and raises a dock by name: "inspector", "histograms", "history", "queue", "replay" or
  // "settings"; false for an unknown name.
  bool raise(const QString& name) const;
  // The View menu's show/hide actions, settings first (Ctrl+,).
  QList<QAction*> toggleActions() const;
  // First start without a saved layout, at the window's real size: the replay strip and the
  // inspector share the bottom third and leave the image, maps and plots the rest.
  void sizeForFirstShow(QMainWindow* window) const;

  SettingsPanel* settings = nullptr;
  ReplayPanel* replay = nullptr;
  DistributionView* inspector = nullptr;
  HistogramPanel* histograms = nullptr;
  HistoryPanel* history = nullptr;
  QueuePanel* queue = nullptr;
  QDockWidget *settingsDock = nullptr, *replayDock = nullptr, *inspectorDock = nullptr,
              *histogramDock = nullptr, *historyDock = nullptr, *queueDock = nullptr;
};

}  // namespace adtree::ui
