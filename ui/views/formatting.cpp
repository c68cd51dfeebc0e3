#include "ui/views/formatting.h"

namespace adtree::ui {

QString formatSeconds(double s) {
  if (s < 0) return QStringLiteral("–");
  if (s < 60) return QString::number(s, 'f', s < 10 ? 2 : 1) + " s";
  return QStringLiteral("%1 min %2 s").arg(int(s) / 60).arg(int(s) % 60);
}

QString formatParams(qint64 n) {
  if (n >= 1000000) return QString::number(double(n) / 1e6, 'f', 1) + "M";
  if (n >= 1000) return QString::number(double(n) / 1e3, 'f', 0) + "k";
  return QString::number(n);
}

}  // namespace adtree::ui
