// The tests' one way to read an error message: what `f` throws as adtree::Error, or "" when it
// throws nothing (a check that looks for words in it then fails, and a check for "" passes).
#pragma once
#include <string>

#include "util/error.h"

namespace adtree::testing {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace adtree::testing
