// How the studio writes durations and parameter counts in labels and status lines.
#pragma once
#include <QString>

namespace adtree::ui {

QString formatSeconds(double s);  // "0.65 s", "12.3 s", "2 min 5 s"; "–" for a negative time
QString formatParams(qint64 n);   // "3.3M", "512k"

}  // namespace adtree::ui
