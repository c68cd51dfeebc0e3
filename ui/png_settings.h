// The generation settings a picture carries (README, "Settings inside the PNG"): one JSON text
// chunk under the key "adtree-settings", the same key and layout the CLI writes, so `adtree
// generate --from-png` and a drop on the studio both restore them, and exiftool, `identify
// -verbose` or PIL read them.
#pragma once
#include <QImage>
#include <QString>

#include <nlohmann/json.hpp>
#include <optional>

#include "ui/run_record.h"

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

}  // namespace adtree::ui
