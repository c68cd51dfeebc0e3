#include "ui/default_model.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace adtree::ui {

QString randomModelDir() {
  // GenericDataLocation honours $XDG_DATA_HOME (~/.local/share by default).
  const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
  return QDir(base).filePath(QStringLiteral("adtree-studio/models/random-tiny"));
}

DefaultModel findDefaultModel() {
  const QString env = qEnvironmentVariable("ADTREE_MODEL");
  if (!env.isEmpty()) return {env, {}, QStringLiteral("$ADTREE_MODEL")};
  for (const char* dir : {ADTREE_SOURCE_MODELS "/emoji", ADTREE_INSTALL_MODELS "/emoji"}) {
    if (QFileInfo::exists(QString::fromUtf8(dir) + "/model.json")) {
      return {QString::fromUtf8(dir), {}, QStringLiteral("the shipped emoji model")};
    }
  }
  return {randomModelDir(), QStringLiteral("tiny"),
          QStringLiteral("a random tiny model (no trained model installed)")};
}

}  // namespace adtree::ui
