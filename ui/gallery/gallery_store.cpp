#include "ui/gallery/gallery_store.h"

#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImageReader>
#include <QStandardPaths>

#include <csignal>

#include "ui/runs/png_settings.h"

namespace adtree::ui {

namespace {
// A test hook (tests/ui/test_gallery.cpp): the process kills itself with half of a gallery file
// written, as a power cut or `kill -9` would, so the test can check that nothing half-written
// ever appears under a gallery name.
bool dieMidWrite() {
  return qEnvironmentVariableIsSet("ADTREE_TEST_KILL_DURING_GALLERY_SAVE");
}
}  // namespace

GalleryStore::GalleryStore(QString dir) : dir_(std::move(dir)) {}

QString GalleryStore::defaultDir() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
         "/adtree-studio/gallery";
}

QString GalleryStore::partialDir() const {
  return dir_ + "/.partial";
}

bool GalleryStore::writeFile(const QString& finalPath, const QByteArray& data,
                             QString* error) const {
  const QString tmp = partialDir() + "/" + QFileInfo(finalPath).fileName();
  QFile f(tmp);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    *error = QObject::tr("Could not create %1: %2.").arg(tmp, f.errorString());
    return false;
  }
  const qint64 half = data.size() / 2;
  bool ok = f.write(data.constData(), half) == half;
  if (ok && dieMidWrite()) {
    f.flush();
    std::raise(SIGKILL);
  }
  ok = ok && f.write(data.constData() + half, data.size() - half) == data.size() - half;
  ok = ok && f.flush();
  f.close();
  if (!ok) {
    *error =
        QObject::tr("Could not write %1: %2 (the disk may be full).").arg(tmp, f.errorString());
    QFile::remove(tmp);
    return false;
  }
  QFile::remove(finalPath);
  if (!QFile::rename(tmp, finalPath)) {
    *error = QObject::tr("Could not move %1 into the gallery.").arg(tmp);
    QFile::remove(tmp);
    return false;
  }
  return true;
}

bool GalleryStore::write(const RunRecord& r, QString* base, QString* error) const {
  QString why;
  if (!QDir().mkpath(partialDir())) {
    if (error) *error = QObject::tr("Could not create the gallery folder %1.").arg(dir_);
    return false;
  }
  const QString stamp = QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss-zzz");
  QString b = QStringLiteral("%1/%2-seed%3").arg(dir_, stamp).arg(r.seed);
  for (int n = 2; QFile::exists(pngPath(b)) || QFile::exists(runPath(b)); ++n) {
    b = QStringLiteral("%1/%2-seed%3-%4").arg(dir_, stamp).arg(r.seed).arg(n);
  }
  QByteArray png;
  {
    QBuffer buf(&png);
    buf.open(QIODevice::WriteOnly);
    if (r.image.isNull() || !withPngSettings(r.image, r).save(&buf, "PNG")) {
      if (error) *error = QObject::tr("The picture could not be encoded as PNG.");
      return false;
    }
  }
  const auto runBytes = runFileBytes(r, &why);
  if (!runBytes) {
    if (error) *error = why;
    return false;
  }
  // The run file first, the picture last: a picture under a gallery name means a whole entry.
  if (!writeFile(runPath(b), *runBytes, &why) || !writeFile(pngPath(b), png, &why)) {
    QFile::remove(runPath(b));
    if (error) *error = why.isEmpty() ? QObject::tr("The run file could not be written.") : why;
    return false;
  }
  if (base) *base = b;
  return true;
}

QVector<GalleryStore::Entry> GalleryStore::list() const {
  QVector<Entry> out;
  QDir d(dir_);
  if (!d.exists()) return out;
  QDir(partialDir()).removeRecursively();
  const auto runs = d.entryInfoList({"*.adtrun.json"}, QDir::Files, QDir::Name);
  for (const auto& fi : runs) {
    const QString base = fi.absoluteFilePath().chopped(int(strlen(".adtrun.json")));
    if (!QFile::exists(pngPath(base))) {
      QFile::remove(fi.absoluteFilePath());  // its save was interrupted before the picture
      continue;
    }
    Entry e;
    e.base = base;
    QImageReader reader(pngPath(base), "PNG");
    const QString text = reader.text(kPngSettingsKey);
    e.image = reader.read();
    if (e.image.isNull()) continue;  // not ours to delete: a picture the user put there
    try {
      e.settings = nlohmann::json::parse(text.toStdString());
    } catch (const nlohmann::json::exception&) {
      e.settings = nlohmann::json::object();
    }
    if (!e.settings.is_object()) e.settings = nlohmann::json::object();
    e.made = QFileInfo(pngPath(base)).lastModified();
    e.bytes = fi.size() + QFileInfo(pngPath(base)).size();
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<RunRecord> GalleryStore::read(const QString& base, QString* error) const {
  return loadRunFile(runPath(base), error);
}

bool GalleryStore::remove(const QString& base, QString* error) const {
  // The picture first: without it the entry is gone even if the run file stays (list() cleans).
  const bool ok = (!QFile::exists(pngPath(base)) || QFile::remove(pngPath(base))) &&
                  (!QFile::exists(runPath(base)) || QFile::remove(runPath(base)));
  if (!ok && error) *error = QObject::tr("Could not delete %1.").arg(pngPath(base));
  return ok;
}

QStringList GalleryStore::enforceCap(qint64 maxBytes) const {
  QStringList removed;
  auto entries = list();
  qint64 total = 0;
  for (const auto& e : entries) total += e.bytes;
  for (int i = 0; i + 1 < entries.size() && total > maxBytes; ++i) {
    if (remove(entries[i].base, nullptr)) {
      total -= entries[i].bytes;
      removed << entries[i].base;
    }
  }
  return removed;
}

}  // namespace adtree::ui
