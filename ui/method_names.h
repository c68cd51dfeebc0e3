// How the studio names and explains the decoding methods, and the map colour ranges a request's
// settings imply: shared by the main window and the compare window so both say the same.
#pragma once
#include <QString>

#include "decode/method.h"
#include "ui/run_state.h"

namespace adtree::ui {

QString method_label(const QString& m);
QString method_help(const QString& m);
bool is_tree_method(const QString& m);
// Map ranges known from the settings, so colours mean the same from the first token to the last.
MapRanges ranges_for(const decode::DecodeRequest& r);

}  // namespace adtree::ui
