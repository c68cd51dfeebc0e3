// The generation settings a picture carries (README, "Settings inside the PNG"): one JSON text
// chunk under the key "adtree-settings", the same key and layout the CLI writes, so `adtree
// generate --from-png` and a drop on the studio both restore them, and exiftool, `identify
// -verbose` or PIL read them.
#pragma once
#include <QImage>
#include <QString>

#include <nlohmann/json.hpp>
#include <optional>

#include "decode/settings/method.h"
#include "ui/runs/run_record.h"

namespace adtree::ui {

extern const QString kPngSettingsKey;

// decode::picture_settings of the run, with the studio's version and the engine's time for the job
// (the result part is what the gallery lists without opening the run).
nlohmann::json pngSettings(const RunRecord& r);
// `image` with the settings of `r` in its text chunk (QImage writes it when saved as PNG).
QImage withPngSettings(QImage image, const RunRecord& r);
// The settings of a PNG on disk; nullopt (and a sentence in *error) when it has none or they are
// not JSON.
std::optional<nlohmann::json> readPngSettings(const QString& path, QString* error);

// What a picture's settings give back to the studio (a drop of an exported PNG): the request
// (method settings and sampling; the seed in request.seed), the prompt and the weights' hash; or,
// when they cannot be used, why, as an error dialog's title, text and detail.
struct PngRestore {
  decode::DecodeRequest request;
  QString prompt;
  std::string modelHash;  // empty when the picture does not say
  QString errorTitle, error, errorDetail;
  bool ok() const { return error.isEmpty(); }
};
PngRestore readPngRestore(const QString& path);

}  // namespace adtree::ui
