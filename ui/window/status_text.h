// The status line's sentence for a finished run (GUI.md "Main window"): tokens, time, speed, τ and
// steps, the acceptance rule it verified with, and how it compares with plain AR on this machine.
#pragma once
#include <QString>

#include "engine/events.h"

namespace adtree::decode {
struct RunSettings;
}

namespace adtree::ui {

// `settings`: what ran (null when the run's statistics could not be read back).
QString finishedStatus(const engine::JobFinished& f, const decode::RunSettings* settings);

}  // namespace adtree::ui
