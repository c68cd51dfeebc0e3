#include "ui/runs/run_record.h"

#include <QBuffer>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include "decode/settings/method_table.h"
#include "ui/views/image_convert.h"
#include "util/error.h"

namespace adtree::ui {

namespace {
// Run files larger than this are not runs (a 32x32 traced run is ~1 MB).
constexpr qint64 kMaxRunFileBytes = 256ll << 20;
}  // namespace

bool RunRecord::lossless() const {
  if (!stats) return false;
  return stats->settings.lossless;
}

bool RunRecord::greedy() const {
  if (!stats) return false;
  return stats->settings.request.sampling.greedy();
}

bool RunRecord::coupled() const {
  if (!stats) return false;
  return stats->settings.verify == "coupled";
}

QString RunRecord::summaryLine() const {
  return QStringLiteral("%1 · τ %2 · %3 s · seed %4")
      .arg(label)
      .arg(stats ? QString::number(stats->summary.tau, 'f', 2) : QStringLiteral("–"))
      .arg(elapsedMs / 1000.0, 0, 'f', 2)
      .arg(seed);
}

namespace {
// The fields a record keeps beside its statistics, read from the statistics' settings.
void fillFromSettings(RunRecord& r) {
  const auto& s = r.stats->settings;  // checked when the statistics were read (RunSettings)
  r.method = QString::fromStdString(decode::to_string(s.method()));
  r.label = QString::fromStdString(r.stats->method);
  r.prompt = QString::fromStdString(s.prompt);
  r.model = QString::fromStdString(s.model_dir);
  r.seed = s.request.seed;
}
}  // namespace

RunRecord recordFromJson(const nlohmann::json& j) {
  RunRecord r;
  r.stats = std::make_shared<const decode::RunStats>(decode::RunStats::from_json(j));
  fillFromSettings(r);
  r.tokens = decode::run_tokens_from_json(j);
  decode::validate_run(*r.stats, r.tokens);  // core, so the fuzzed checks are the shipped ones
  if (j.contains("vectors")) {
    const auto& v = j["vectors"];
    if (!v.is_array() || r.tokens.empty() || v.size() % r.tokens.size() != 0)
      throw Error("the run's vectors are not a whole number of numbers per token");
    for (const auto& x : v) {
      if (!x.is_number()) throw Error("the run's vectors hold something that is not a number");
      r.vectors.push_back(x.get<float>());
    }
  }
  r.elapsedMs = r.stats->summary.wall_ms;
  if (j.contains("studio") && j["studio"].is_object()) {
    const auto& st = j["studio"];
    r.elapsedMs = st.value("elapsed_ms", r.elapsedMs);
    const std::string b64 = st.value("image_png_base64", std::string());
    if (!b64.empty()) {
      const QByteArray png = QByteArray::fromBase64(QByteArray::fromStdString(b64));
      if (!r.image.loadFromData(png, "PNG")) throw Error("the run's picture is not a readable PNG");
      r.image = r.image.convertToFormat(QImage::Format_RGB888);
    }
  }
  return r;
}

RunRecord recordFromFinished(const engine::JobFinished& f) {
  RunRecord r;
  r.stats = f.stats;
  fillFromSettings(r);
  r.tokens = f.tokens;
  r.vectors = f.vectors;
  r.elapsedMs = f.elapsed_ms;
  r.image = toQImage(f.image);
  return r;
}

nlohmann::json statsJson(const RunRecord& r) {
  auto j = r.stats->to_json();
  j["tokens"] = r.tokens;
  if (!r.vectors.empty()) j["vectors"] = r.vectors;
  return j;
}

std::optional<QByteArray> runFileBytes(const RunRecord& r, QString* error) {
  nlohmann::json j = statsJson(r);
  nlohmann::json studio = {{"version", 1}, {"elapsed_ms", r.elapsedMs}};
  if (!r.image.isNull()) {
    QByteArray png;
    QBuffer buf(&png);
    buf.open(QIODevice::WriteOnly);
    if (!r.image.save(&buf, "PNG")) {
      if (error) *error = QObject::tr("The picture could not be encoded as PNG.");
      return std::nullopt;
    }
    studio["image_png_base64"] = png.toBase64().toStdString();
  }
  j["studio"] = studio;
  return QByteArray::fromStdString(j.dump(1) + "\n");
}

bool saveRunFile(const RunRecord& r, const QString& path, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  const auto bytes = runFileBytes(r, error);
  if (!bytes) return false;
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) {
    return fail(QObject::tr("Could not create %1: %2.").arg(path, f.errorString()));
  }
  if (f.write(*bytes) != bytes->size() || !f.commit()) {
    return fail(
        QObject::tr("Could not write %1: %2 (nothing was changed).").arg(path, f.errorString()));
  }
  return true;
}

std::optional<RunRecord> loadRunFile(const QString& path, QString* error) {
  auto fail = [&](const QString& why) -> std::optional<RunRecord> {
    if (error) *error = why;
    return std::nullopt;
  };
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly))
    return fail(QObject::tr("Could not open %1: %2.").arg(path, f.errorString()));
  if (f.size() > kMaxRunFileBytes)
    return fail(QObject::tr("%1 is too large to be a run file.").arg(path));
  const QByteArray data = f.readAll();
  try {
    auto j = nlohmann::json::parse(data.constBegin(), data.constEnd());
    return recordFromJson(j);
  } catch (const nlohmann::json::exception& e) {
    return fail(QObject::tr("%1 is not valid JSON: %2").arg(QFileInfo(path).fileName(), e.what()));
  } catch (const std::exception& e) {
    return fail(QObject::tr("%1 is not a run: %2").arg(QFileInfo(path).fileName(), e.what()));
  }
}

QString cellsCsv(const RunRecord& r) {
  QString out = QStringLiteral(
      "cell,row,col,token,depth,top1,accept_len,tree_depth,tree_width,rank,step,step_drafted,"
      "step_alpha\n");
  const int w = std::max(1, r.gridW());
  // The step that committed each cell (PJD's steps commit on several rows).
  const auto& steps = r.stats->steps;
  std::vector<size_t> step_of(r.tokens.size(), 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    for (int64_t i = 0; i < steps[s].committed; ++i) {
      const int64_t c = steps[s].cell(size_t(i));
      if (c >= 0 && c < int64_t(step_of.size())) step_of[size_t(c)] = s;
    }
  }
  for (size_t c = 0; c < r.tokens.size(); ++c) {
    const auto& st = steps.at(step_of[c]);
    const auto& cs = r.stats->grids.at(int64_t(c));
    out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13\n")
               .arg(c)
               .arg(int(c) / w)
               .arg(int(c) % w)
               .arg(r.tokens[c])
               .arg(cs.depth)
               .arg(double(cs.top1), 0, 'g', 6)
               .arg(cs.accept_len)
               .arg(cs.tree_depth)
               .arg(cs.tree_width)
               .arg(cs.rank)
               .arg(st.step)
               .arg(st.drafted)
               .arg(st.alpha, 0, 'g', 6);
  }
  return out;
}

}  // namespace adtree::ui
