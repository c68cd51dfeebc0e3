// Progress of long CLI work on a terminal (issue "Real checkpoints without Python", part 5): one
// line on stderr, rewritten in place ("converting: writing the GPT  52%"), cleared at the end;
// lines the work prints meanwhile overwrite it (the cursor stays at its start).
// Quiet when stderr is not a terminal or the user passed --quiet, so logs and pipes stay clean.
#pragma once
#include <chrono>
#include <string>

namespace adtree::cli {

class TerminalProgress {
 public:
  TerminalProgress(std::string what, bool quiet);
  ~TerminalProgress();  // clears the line
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  // Draws at most ten times a second, and always when the stage changes.
  void update(const std::string& stage, double fraction);
  bool active() const { return active_; }

 private:
  std::string what_, stage_;
  bool active_;
  size_t drawn_ = 0;  // characters on the line now
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace adtree::cli
