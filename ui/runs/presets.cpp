#include "ui/runs/presets.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>

namespace adtree::ui {

namespace {
constexpr const char* kGroup = "presets";
}

QStringList PresetStore::names() const {
  QSettings s;
  s.beginGroup(kGroup);
  QStringList n = s.childKeys();
  n.sort(Qt::CaseInsensitive);
  return n;
}

void PresetStore::save(const QString& name, const Preset& p) {
  QJsonObject o{{"method", p.method}, {"relax", p.relax}, {"settings", p.settings}};
  QSettings s;
  s.beginGroup(kGroup);
  s.setValue(name, QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)));
}

std::optional<Preset> PresetStore::load(const QString& name) const {
  QSettings s;
  s.beginGroup(kGroup);
  if (!s.contains(name)) return std::nullopt;
  const auto doc = QJsonDocument::fromJson(s.value(name).toString().toUtf8());
  if (!doc.isObject() || !doc.object().value("method").isString()) return std::nullopt;
  const auto o = doc.object();
  // Presets saved before CASCADE kept a LANTERN switch instead of the rule's name.
  const QString relax = o.contains("relax")           ? o.value("relax").toString()
                        : o.value("lantern").toBool() ? QStringLiteral("lantern")
                                                      : QStringLiteral("lossless");
  return Preset{o.value("method").toString(), relax, o.value("settings").toString()};
}

void PresetStore::remove(const QString& name) {
  QSettings s;
  s.beginGroup(kGroup);
  s.remove(name);
}

}  // namespace adtree::ui
