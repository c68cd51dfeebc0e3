// QCustomPlot through one door. adtree_ui builds with QT_NO_KEYWORDS (libtorch's headers use
// `slots` and `signals` as identifiers), but qcustomplot.h is written with Qt's keywords: spell
// them for it here, and only here. Never include this together with libtorch headers.
#pragma once
#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
