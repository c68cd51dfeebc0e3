// Exports: every File > Export command and Save Run (GUI.md "Exports"), each a dialog in front of
// one write. Every write goes through one helper that says "Saved ..." in the status bar or shows
// one error dialog naming the file and the reason, and returns false; nothing is half-written
// (QSaveFile, or a picture encoded before its file is opened).
#pragma once
#include <QImage>
#include <QString>

#include <functional>

#include "ui/runs/run_record.h"

class QWidget;

namespace adtree::ui {

class ReplayPanel;
class RunView;

class Exports {
 public:
  using Status = std::function<void(const QString& message, int timeoutMs)>;
  // What the exports read: the run on screen (null = none), its view and replay, and whether
  // exported PNGs carry their settings (Edit > Write Settings into Exported PNGs).
  struct Source {
    std::function<const RunRecord*()> shown;
    RunView* view = nullptr;
    ReplayPanel* replay = nullptr;
    std::function<bool()> pngSettings;
  };
  Exports(QWidget* parent, Source source, Status status);

  // The writes (tests and scripts call them directly); false when there is nothing to write.
  bool image(const QString& path, int scale);
  bool maps(const QString& dir, const QString& prefix);
  bool statsJson(const QString& path);
  bool statsCsv(const QString& path);
  bool tree(const QString& path);  // .svg or .png by suffix
  bool runFile(const QString& path);

  // The same behind their file dialogs (the File menu's commands).
  void askImage();
  void askMaps();
  void askStatsJson();
  void askStatsCsv();
  void askTree();
  void askRunFile();

 private:
  // Runs `write` (false + *why on failure): an error dialog on failure, else `saved` (or
  // "Saved PATH") in the status bar; with `quiet` the caller reports the success itself.
  bool writeOrReport(const QString& path, const std::function<bool(QString* why)>& write,
                     const QString& saved = {}, bool quiet = false);

  QWidget* parent_;
  Source source_;
  Status status_;
};

}  // namespace adtree::ui
