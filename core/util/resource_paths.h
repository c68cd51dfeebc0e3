// Where the shipped models live, found relative to the running program, so the same binary works
// from the build tree, an install prefix and the .deb with no build paths compiled in:
//   <dir of the executable>/../share/adtree-studio/models/<name>
// (the build tree stages bin/ and share/ the same way; see the top-level CMakeLists.txt).
#pragma once
#include <string>
#include <vector>

namespace adtree::util {

// Directory of the running executable (/proc/self/exe), "" if it cannot be read.
std::string executable_dir();

// Candidate directories of the shipped model `name`, most specific first: $ADTREE_DATA_DIR
// (an override for relocated data), then the data directory next to the executable.
std::vector<std::string> shipped_model_candidates(const std::string& name = "emoji");

// The first candidate holding a model.json, or "" when no shipped model is installed.
std::string find_shipped_model(const std::string& name = "emoji");

// Every shipped model directory (one holding a model.json) in the first candidate models folder
// that exists, sorted by name; empty when none is installed.
std::vector<std::string> shipped_models();

// The program's cache folder (XDG base directories): $XDG_CACHE_HOME/adtree-studio, else
// ~/.cache/adtree-studio; "" when neither variable is set. Model hashes, token colours and npm
// packages are kept under it.
std::string user_cache_dir();

// A data file shipped under share/adtree-studio/ (e.g. "imagenet/classes.json"): $ADTREE_DATA_DIR
// first, then next to the executable; "" when neither has it.
std::string find_data_file(const std::string& relative);

}  // namespace adtree::util
