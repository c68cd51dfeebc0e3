#include "util/resource_paths.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace adtree::util {

std::string user_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "adtree-studio").string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (fs::path(home) / ".cache" / "adtree-studio").string();
  return "";
}

std::string executable_dir() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return exe.parent_path().string();
}

std::vector<std::string> shipped_model_candidates(const std::string& name) {
  std::vector<std::string> out;
  if (const char* data = std::getenv("ADTREE_DATA_DIR"); data && *data) {
    out.push_back((fs::path(data) / "models" / name).string());
  }
  const auto exe = executable_dir();
  if (!exe.empty()) {
    out.push_back((fs::path(exe) / ".." / "share" / "adtree-studio" / "models" / name)
                      .lexically_normal()
                      .string());
  }
  return out;
}

std::string find_shipped_model(const std::string& name) {
  for (const auto& dir : shipped_model_candidates(name)) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / "model.json", ec)) return dir;
  }
  return "";
}

std::vector<std::string> shipped_models() {
  std::vector<std::string> out;
  for (const auto& candidate : shipped_model_candidates("")) {
    std::error_code ec;
    const fs::path root = fs::path(candidate).parent_path();  // ".../models/" -> ".../models"
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (e.is_directory(ec) && fs::exists(e.path() / "model.json", ec))
        out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  return out;
}

std::string find_data_file(const std::string& relative) {
  std::vector<fs::path> roots;
  if (const char* data = std::getenv("ADTREE_DATA_DIR"); data && *data) roots.emplace_back(data);
  const auto exe = executable_dir();
  if (!exe.empty()) roots.push_back(fs::path(exe) / ".." / "share" / "adtree-studio");
  for (const auto& root : roots) {
    std::error_code ec;
    const auto p = (root / relative).lexically_normal();
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

}  // namespace adtree::util
