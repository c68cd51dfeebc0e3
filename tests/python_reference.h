// The Python that runs the independent references (tests/llamagen, tests/mar, tests/t5):
// $ADTREE_PYTHON, else Debian's /usr/bin/python3; suites skip with a message when it has no torch.
#pragma once
#include <cstdlib>
#include <string>

namespace adtree::testing {

inline std::string python() {
  const char* p = std::getenv("ADTREE_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

inline bool have_torch() {
  static const bool ok =
      std::system((python() + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
  return ok;
}

}  // namespace adtree::testing
