#include "ui/window/exports.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QSaveFile>
#include <QWidget>

#include "ui/gallery/run_view.h"
#include "ui/panels/heatmap_panel.h"
#include "ui/panels/replay_panel.h"
#include "ui/runs/png_settings.h"
#include "ui/runs/run_state.h"
#include "ui/views/tree_view.h"
#include "ui/window/error_dialog.h"

namespace adtree::ui {

namespace {
bool writeText(const QString& path, const QByteArray& data, QString* why) {
  QSaveFile f(path);
  if (f.open(QIODevice::WriteOnly) && f.write(data) == data.size() && f.commit()) return true;
  *why = f.errorString();
  return false;
}
}  // namespace

Exports::Exports(QWidget* parent, Source source, Status status)
    : parent_(parent), source_(std::move(source)), status_(std::move(status)) {}

bool Exports::writeOrReport(const QString& path, const std::function<bool(QString*)>& write,
                            const QString& saved, bool quiet) {
  QString why;
  if (!write(&why)) {
    showError(parent_, QObject::tr("Could not save"),
              QObject::tr("Could not write %1.").arg(path.toHtmlEscaped()), why);
    return false;
  }
  if (!quiet) status_(saved.isEmpty() ? QObject::tr("Saved %1").arg(path) : saved, 5000);
  return true;
}

bool Exports::image(const QString& path, int scale) {
  const QImage& img = source_.view->picture();
  if (img.isNull()) return false;
  const RunRecord* r = source_.shown();
  scale = std::clamp(scale, 1, 64);
  QImage big = img.scaled(img.size() * scale, Qt::IgnoreAspectRatio, Qt::FastTransformation);
  // How it was made, in the PNG's text chunk "adtree-settings" (the CLI writes the same key).
  if (r && r->stats && source_.pngSettings()) big = withPngSettings(big, *r);
  return writeOrReport(
      path,
      [&](QString* why) {
        QSaveFile f(path);
        if (f.open(QIODevice::WriteOnly) && big.save(&f, "PNG") && f.commit()) return true;
        *why = f.errorString();
        return false;
      },
      QObject::tr("Saved %1 (%2×%3)").arg(path).arg(big.width()).arg(big.height()));
}

bool Exports::maps(const QString& dir, const QString& prefix) {
  HeatmapPanel* heatmaps = source_.view->heatmaps();
  static const char* kNames[RunState::MapCount] = {
      "depth",         "top1",       "accept-length", "drafted-depth",
      "drafted-width", "drafted-by", "planned-depth", "planned-width"};
  QStringList written;
  for (int m = 0; m < RunState::MapCount; ++m) {
    const QString path = QDir(dir).filePath(QStringLiteral("%1-%2.png").arg(prefix, kNames[m]));
    const bool ok = writeOrReport(
        path,
        [&](QString* why) {
          if (heatmaps->saveMapPng(RunState::Map(m), path)) return true;
          *why = QObject::tr("the folder is not writable, or the disk is full");
          return false;
        },
        {}, /*quiet=*/true);
    if (!ok) return false;
    written << QFileInfo(path).fileName();
  }
  status_(QObject::tr("Saved %1 in %2").arg(written.join(", "), dir), 8000);
  return true;
}

bool Exports::statsJson(const QString& path) {
  const RunRecord* r = source_.shown();
  if (!r) return false;
  const QByteArray text = QByteArray::fromStdString(ui::statsJson(*r).dump(1) + "\n");
  return writeOrReport(path, [&](QString* why) { return writeText(path, text, why); });
}

bool Exports::statsCsv(const QString& path) {
  const RunRecord* r = source_.shown();
  if (!r) return false;
  const QByteArray text = cellsCsv(*r).toUtf8();
  return writeOrReport(path, [&](QString* why) { return writeText(path, text, why); });
}

bool Exports::tree(const QString& path) {
  TreeView* view = source_.replay->treeView();
  const bool svg = path.endsWith(".svg", Qt::CaseInsensitive);
  return writeOrReport(path, [&](QString* why) {
    if (svg ? view->saveSvg(path) : view->savePng(path)) return true;
    *why = QObject::tr("the folder is not writable, or the disk is full");
    return false;
  });
}

bool Exports::runFile(const QString& path) {
  const RunRecord* r = source_.shown();
  return r && writeOrReport(path, [&](QString* why) { return saveRunFile(*r, path, why); });
}

void Exports::askImage() {
  const QImage& img = source_.view->picture();
  if (img.isNull()) return;
  bool ok = false;
  // Small images are worth enlarging with crisp pixels for slides; offer the common factors.
  const QStringList scales{"1", "2", "4", "8", "16"};
  const int suggested = std::clamp(512 / std::max(1, img.width()), 1, 16);
  int current = 0;
  for (int i = 0; i < scales.size(); ++i) {
    if (scales[i].toInt() <= suggested) current = i;
  }
  const QString pick = QInputDialog::getItem(
      parent_, QObject::tr("Export image"),
      QObject::tr("Upscale (nearest neighbour, crisp tokens):"), scales, current, false, &ok);
  if (!ok) return;
  const QString path = QFileDialog::getSaveFileName(parent_, QObject::tr("Export image"),
                                                    QDir::home().filePath("adtree.png"),
                                                    QObject::tr("PNG images (*.png)"));
  if (!path.isEmpty()) image(path, pick.toInt());
}

void Exports::askMaps() {
  const QString dir = QFileDialog::getExistingDirectory(
      parent_, QObject::tr("Export the maps into a folder"), QDir::homePath());
  if (dir.isEmpty()) return;
  const RunRecord* r = source_.shown();
  maps(dir, r ? QStringLiteral("adtree-run-%1").arg(r->id) : QStringLiteral("adtree"));
}

void Exports::askStatsJson() {
  if (!source_.shown()) return;
  const QString path = QFileDialog::getSaveFileName(parent_, QObject::tr("Save statistics"),
                                                    QDir::home().filePath("adtree-stats.json"),
                                                    QObject::tr("JSON (*.json)"));
  if (!path.isEmpty()) statsJson(path);
}

void Exports::askStatsCsv() {
  if (!source_.shown()) return;
  const QString path = QFileDialog::getSaveFileName(parent_, QObject::tr("Save statistics as CSV"),
                                                    QDir::home().filePath("adtree-cells.csv"),
                                                    QObject::tr("CSV (*.csv)"));
  if (!path.isEmpty()) statsCsv(path);
}

void Exports::askTree() {
  const int step = source_.replay->step();
  const QString path = QFileDialog::getSaveFileName(
      parent_, QObject::tr("Export the draft tree"),
      QDir::home().filePath(QStringLiteral("adtree-tree-step-%1.svg").arg(step)),
      QObject::tr("SVG (*.svg);;PNG (*.png)"));
  if (!path.isEmpty()) tree(path);
}

void Exports::askRunFile() {
  const RunRecord* r = source_.shown();
  if (!r) return;
  const QString path = QFileDialog::getSaveFileName(
      parent_, QObject::tr("Save run"),
      QDir::home().filePath(QStringLiteral("adtree-run-%1.adtrun.json").arg(r->id)),
      QObject::tr("ADT-Tree runs (*.adtrun.json)"));
  if (!path.isEmpty()) runFile(path);
}

}  // namespace adtree::ui
