// A number as a label shows it: the shortest of 6 significant digits ("0.5", "58", "1e-05"), as
// sweep labels and the settings' help and messages write their values.
#pragma once
#include <sstream>
#include <string>

namespace adtree {

inline std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace adtree
