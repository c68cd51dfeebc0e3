// RunRecord: one finished run as the studio keeps it (history, compare, export) and as it is saved
// to and opened from a run file. The file is the engine's statistics JSON, the same as `adtree
// generate --stats FILE --trace` writes (settings, summary, grids, steps, traces, tokens), with a
// "studio" object added for the picture (PNG, base64) and the engine's wall time. So a run is one
// shareable, human-readable file, the CLI's files open in the studio, and the settings in it
// reproduce the run.
#pragma once
#include <QImage>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

#include "decode/stats/stats.h"
#include "engine/events.h"

namespace adtree::ui {

struct RunRecord {
  int id = 0;  // the session's history number (0 = not in the history)
  QString prompt;
  QString method;  // the method key ("adt", ...)
  QString label;   // the statistics' method label ("adt+lantern", "pathspec (lossy)")
  QString model;   // the model directory it ran on
  quint64 seed = 0;
  // With traces when recorded. Shared and immutable: the engine's own object, so a finished run
  // reaches the history without a copy, and a gallery save reads it on another thread. Never null
  // in a record the studio made or opened.
  std::shared_ptr<const decode::RunStats> stats;
  std::vector<int64_t> tokens;  // codes (a continuous model's run: zeros)
  // A continuous model's tokens, the statistics' token count times their numbers (empty for a
  // model of codes); run files keep them as "vectors".
  std::vector<float> vectors;
  QImage image;          // null when the file had none (a CLI statistics file)
  double elapsedMs = 0;  // the engine's time: conditioning, decoding, final VQ decode

  int gridH() const { return int(stats->grids.h()); }
  int gridW() const { return int(stats->grids.w()); }
  bool lossless() const;  // settings.lossless (AR is lossless)
  bool greedy() const;    // settings.sampling.temperature == 0
  bool coupled() const;   // shared-noise coupling (AR when sampling, and coupled methods)
  // One line for lists: "adt · τ 2.41 · 1.8 s · seed 3".
  QString summaryLine() const;
};

// From the engine's finished event: its statistics are shared, not copied or parsed.
RunRecord recordFromFinished(const engine::JobFinished& f);
// From a statistics JSON (a run file or the CLI's --stats output). Throws adtree::Error.
RunRecord recordFromJson(const nlohmann::json& j);
// The statistics JSON of a run, as the CLI's --stats writes it (settings, summary, grids, steps,
// traces, tokens): what Export > Statistics as JSON writes and what a run file holds.
nlohmann::json statsJson(const RunRecord& r);

// Run files (*.adtrun.json). Errors come back as complete sentences; nothing is half-written (the
// file is written to a temporary name and renamed).
bool saveRunFile(const RunRecord& r, const QString& path, QString* error);
// The bytes of a run file (what saveRunFile writes).
std::optional<QByteArray> runFileBytes(const RunRecord& r, QString* error);
std::optional<RunRecord> loadRunFile(const QString& path, QString* error);

// One row per token cell: position, token, the cell statistics and the step that committed it
// (with that step's tree shape, drafted count and alpha): a tidy table for spreadsheets and R.
QString cellsCsv(const RunRecord& r);

}  // namespace adtree::ui
