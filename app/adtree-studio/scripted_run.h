// Scripted runs of the studio (`--run PROMPT` and the options that go with it): demos,
// screenshots (docs/screenshots, tools/screenshots.sh) and the GUI measurements (docs/GUI.md,
// "Measurements"): generate once the model is loaded, then replay, inspect, compare, or benchmark.
#pragma once
#include <QCommandLineParser>

#include "studio_options.h"
#include "ui/panels/stall_meter.h"
#include "ui/window/main_window.h"

namespace adtree::studio {

// Wires the scripted run into `w` and runs the event loop; returns its exit code.
int run_scripted(ui::TimedApplication& app, ui::MainWindow& w, const QCommandLineParser& cli,
                 const StudioOptions& o);

}  // namespace adtree::studio
