#include "ui/png_settings.h"

#include <QFileInfo>
#include <QImageReader>

#include "decode/picture_settings.h"
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

}  // namespace adtree::ui
