// RunRecord: one finished run as the studio keeps it (history, compare, export) and as it is saved
// to and opened from a run file. The file is the engine's statistics JSON, the same as `adtree
// generate --stats FILE --trace` writes (settings, summary, grids, steps, traces, tokens), with a
// "studio" object added for the picture (PNG, base64) and the engine's wall time. So a run is one
// shareable, human-readable file, the CLI's files open in the studio, and the settings in it
// reproduce the run.
#pragma once
#include <QImage>
#include <QString>

#include <optional>
#include <vector>

#include "decode/stats.h"
#include "engine/events.h"

namespace adtree::ui {

struct RunRecord {
  int id = 0;  // the session's history number (0 = not in the history)
  QString prompt;
  QString method;  // the method key ("adt", ...)
  QString label;   // the statistics' method label ("adt+lantern", "pathspec (lossy)")
  QString model;   // the model directory it ran on
  quint64 seed = 0;
  decode::RunStats stats;  // with traces when recorded
  std::vector<int64_t> tokens;
  QImage image;          // null when the file had none (a CLI statistics file)
  double elapsedMs = 0;  // the engine's time: conditioning, decoding, final VQ decode
  nlohmann::json json;   // the full statistics JSON (what Save Statistics writes)

  int gridH() const { return int(stats.grids.h()); }
  int gridW() const { return int(stats.grids.w()); }
  bool lossless() const;  // settings.lossless (AR is lossless)
  bool greedy() const;    // settings.sampling.temperature == 0
  bool coupled() const;   // shared-noise coupling (AR when sampling, and coupled methods)
  // One line for lists: "adt · τ 2.41 · 1.8 s · seed 3".
  QString summaryLine() const;
};

// From the engine's finished event (its stats_json carries settings, traces and tokens).
RunRecord recordFromFinished(const engine::JobFinished& f);
// From a statistics JSON (a run file or the CLI's --stats output). Throws adtree::Error.
RunRecord recordFromJson(const nlohmann::json& j);

// Run files (*.adtrun.json). Errors come back as complete sentences; nothing is half-written (the
// file is written to a temporary name and renamed).
bool saveRunFile(const RunRecord& r, const QString& path, QString* error);
std::optional<RunRecord> loadRunFile(const QString& path, QString* error);

// One row per token cell: position, token, the cell statistics and the step that committed it
// (with that step's tree shape, drafted count and alpha): a tidy table for spreadsheets and R.
QString cellsCsv(const RunRecord& r);

}  // namespace adtree::ui
