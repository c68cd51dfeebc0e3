// Exports: every File > Export command and Save Run (GUI.md "Exports"), each a dialog in front of
// one write. Every write goes through one helper that says "Saved ..." in the status bar or shows
// one error dialog naming the file and the reason, and returns false; nothing is half-written
// (QSaveFile, or a picture encoded before its file is opened).
#pragma once
#include <QImage>
#include <QString>

#include <functional>

#include "ui/run_record.h"

class QWidget;

namespace adtree::ui {

class HeatmapPanel;
class TreeView;

class Exports {
 public:
  using Status = std::function<void(const QString& message, int timeoutMs)>;
  Exports(QWidget* parent, Status status);

  // The writes (tests and scripts call them directly).
  bool image(const QImage& img, const RunRecord* r, const QString& path, int scale,
             bool withSettings);
  bool maps(HeatmapPanel* maps, const QString& dir, const QString& prefix);
  bool statsJson(const RunRecord& r, const QString& path);
  bool statsCsv(const RunRecord& r, const QString& path);
  bool tree(TreeView* tree, const QString& path);  // .svg or .png by suffix
  bool runFile(const RunRecord& r, const QString& path);

  // The same behind their file dialogs.
  void askImage(const QImage& img, const RunRecord* r, bool withSettings);
  void askMaps(HeatmapPanel* maps, const RunRecord* r);
  void askStatsJson(const RunRecord& r);
  void askStatsCsv(const RunRecord& r);
  void askTree(TreeView* tree, int step);
  void askRunFile(const RunRecord& r);

 private:
  // Runs `write` (false + *why on failure): an error dialog on failure, else `saved` (or
  // "Saved PATH") in the status bar; with `quiet` the caller reports the success itself.
  bool writeOrReport(const QString& path, const std::function<bool(QString* why)>& write,
                     const QString& saved = {}, bool quiet = false);

  QWidget* parent_;
  Status status_;
};

}  // namespace adtree::ui
