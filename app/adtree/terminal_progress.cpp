#include "terminal_progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace adtree::cli {

TerminalProgress::TerminalProgress(std::string what, bool quiet)
    : what_(std::move(what)), active_(!quiet && ::isatty(STDERR_FILENO) == 1) {}

// The line is drawn as ESC[K (clear to the end) + text, with the cursor sent back to its start:
// a log line written to the terminal after it (a trainer's step lines on stdout) overwrites it
// instead of following it.
TerminalProgress::~TerminalProgress() {
  if (active_ && drawn_ > 0) std::fputs("\r\x1b[K", stderr);
}

void TerminalProgress::update(const std::string& stage, double fraction) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (stage == stage_ && now - last_ < std::chrono::milliseconds(100)) return;
  stage_ = stage;
  last_ = now;
  const int pct = int(std::lround(std::fmin(std::fmax(fraction, 0.0), 1.0) * 100));
  char line[256];
  const int n = std::snprintf(line, sizeof line, "%s: %s %3d%%", what_.c_str(), stage.c_str(), pct);
  const size_t len = n < 0 ? 0 : std::min(size_t(n), sizeof line - 1);
  std::fprintf(stderr, "\r\x1b[K%s\r", line);
  std::fflush(stderr);
  drawn_ = len;
}

}  // namespace adtree::cli
