// Precompiled header for the Qt targets (the studio's widgets, adtree-figures, the GUI tests):
// libtorch's tensor API as core's, then Qt Widgets and QCustomPlot, which most of their files
// include (QCustomPlot through views/qcp.h, which lends it the Qt keywords). Without it each of
// these files parsed Qt and QCustomPlot on its own: about half of a clean 2-core build's compile
// time went to the Qt targets.
#pragma once
#include <QtWidgets>
#include "views/qcp.h"

#include "util/torch_pch.h"
