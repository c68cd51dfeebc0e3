// One exception type for every user-facing error (bad files, bad settings, bad prompts).
// Messages are complete sentences a user can act on: they name the file / setting and the problem.
#pragma once
#include <stdexcept>
#include <string>

namespace adtree {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Long work (a conversion, an import) stopped because the user asked: not an error to report.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

}  // namespace adtree
