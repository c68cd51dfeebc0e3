#include "ui/runs/png_settings.h"

#include <QFileInfo>
#include <QImageReader>

#include "decode/settings/method_table.h"
#include "decode/settings/picture_settings.h"
#include "imaging/png_text.h"
#include "util/error.h"

namespace adtree::ui {

const QString kPngSettingsKey = QString::fromLatin1(imaging::kSettingsKeyword);

nlohmann::json pngSettings(const RunRecord& r) {
  return decode::picture_settings(*r.stats, "adtree-studio " ADTREE_VERSION, r.elapsedMs);
}

QImage withPngSettings(QImage image, const RunRecord& r) {
  image.setText(kPngSettingsKey,
                QString::fromStdString(pngSettings(r).dump(-1, ' ', /*ensure_ascii=*/true)));
  return image;
}

std::optional<nlohmann::json> readPngSettings(const QString& path, QString* error) {
  auto fail = [&](const QString& why) -> std::optional<nlohmann::json> {
    if (error) *error = why;
    return std::nullopt;
  };
  QImageReader reader(path, "PNG");
  // The text chunks come before the pixels: no need to decode the picture for them.
  const QString text = reader.text(kPngSettingsKey);
  if (text.isEmpty()) {
    if (!QFileInfo(path).isReadable() || !reader.canRead())
      return fail(QObject::tr("%1 is not a readable PNG.").arg(path));
    return fail(QObject::tr("%1 carries no ADT-Tree Studio settings (saved without them, or by "
                            "another program).")
                    .arg(path));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.toStdString());
  } catch (const nlohmann::json::exception&) {
    return fail(QObject::tr("The settings in %1 are not valid JSON.").arg(path));
  }
  try {
    decode::check_picture_settings(j);  // the fields' types, before anything reads them
  } catch (const Error& e) {
    return fail(QObject::tr("The settings in %1 are not ADT-Tree Studio's: %2.")
                    .arg(path, QString::fromStdString(e.what())));
  }
  return j;
}

namespace {
PngRestore failed(const QString& title, const QString& text, const QString& detail = {}) {
  PngRestore r;
  r.errorTitle = title;
  r.error = text;
  r.errorDetail = detail;
  return r;
}

// The method the settings name, if this build knows it (checked before the settings are read, so
// a picture of a newer studio says so instead of failing on its settings).
bool namesKnownMethod(const nlohmann::json& ms) {
  if (!ms.is_object()) return false;
  try {
    decode::method_from_string(ms.value("method", std::string()));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

PngRestore readPngRestore(const QString& path) {
  QString error;
  const auto j = readPngSettings(path, &error);
  const auto ms = j ? j->value("method_settings", nlohmann::json::object()) : nlohmann::json();
  if (!namesKnownMethod(ms)) {
    return failed(
        QObject::tr("No settings in this picture"),
        error.isEmpty() ? QObject::tr("%1 names no method this studio knows.").arg(path) : error);
  }
  PngRestore r;
  try {
    const auto p = decode::read_picture_settings(*j);
    r.request = p.request;
    r.prompt = QString::fromStdString(p.prompt);
    r.modelHash = p.model_hash;
  } catch (const std::exception& e) {
    return failed(QObject::tr("Unreadable settings"),
                  QObject::tr("The settings in %1 cannot be read.").arg(path), e.what());
  }
  return r;
}

}  // namespace adtree::ui
