#include "ui/window/default_model.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include "util/resource_paths.h"

namespace adtree::ui {

QString randomModelDir() {
  // GenericDataLocation honours $XDG_DATA_HOME (~/.local/share by default).
  const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
  return QDir(base).filePath(QStringLiteral("adtree-studio/models/random-tiny"));
}

DefaultModel findDefaultModel() {
  const QString env = qEnvironmentVariable("ADTREE_MODEL");
  if (!env.isEmpty()) return {env, {}, QStringLiteral("$ADTREE_MODEL")};
  const auto shipped = util::find_shipped_model("emoji");
  if (!shipped.empty())
    return {QString::fromStdString(shipped), {}, QStringLiteral("the shipped emoji model")};
  return {randomModelDir(), QStringLiteral("tiny"),
          QStringLiteral("a random tiny model (no trained model installed)")};
}

}  // namespace adtree::ui
