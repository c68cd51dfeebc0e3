// The acceptance-rule chooser of the prompt bar and of each side of Compare: lossless, or a
// relaxed (lossy) rule of draft trees, LANTERN or CASCADE. The items carry the rule's settings
// key (decode::to_string(Acceptance)) as their data.
#pragma once
#include <QComboBox>

#include "decode/settings/method.h"

namespace adtree::ui {

QComboBox* makeRelaxBox(QWidget* parent);
// The box's rule; Lossless while the box is disabled (a method without draft trees).
decode::Acceptance relaxOf(const QComboBox* box);
void setRelax(QComboBox* box, decode::Acceptance a);
void setRelaxKey(QComboBox* box, const QString& key);  // an unknown key chooses Lossless

}  // namespace adtree::ui
