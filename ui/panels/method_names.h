// How the studio names and explains the decoding methods, and the map colour ranges a request's
// settings imply, from the methods' rows (decode/settings/method_table.h): shared by the main
// window and the compare window so both say what the CLI says.
#pragma once
#include <QString>

#include "decode/settings/method.h"
#include "ui/runs/run_state.h"

class QComboBox;

namespace adtree::ui {

QString method_label(decode::Method m);
QString method_help(decode::Method m);
// The label of a method named by its key where one is read (a run file, a figure's data); a word
// this build does not know is shown as it is.
QString method_label(const QString& key);
// A method picker's items: each method's label, help as tooltip, and key as data (the word the
// settings keep). methodOf / selectMethod read and choose by value.
void fillMethodBox(QComboBox* box, bool withHelp);
decode::Method methodOf(const QComboBox* box);
void selectMethod(QComboBox* box, decode::Method m);
// Map ranges known from the settings, so colours mean the same from the first token to the last.
MapRanges ranges_for(const decode::DecodeRequest& r);

}  // namespace adtree::ui
