#include "engine/license_summary.h"

namespace adtree::engine {

namespace {

// A licence field: a string, a list of per-source records (their licence and style), or a record.
std::string licence_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v) {
      std::string one = e.is_string() ? e.get<std::string>()
                        : e.is_object()
                            ? e.value("images_license", e.value("license", std::string("?")))
                            : std::string("?");
      if (e.is_object() && e.contains("style")) one += " (" + e.value("style", std::string()) + ")";
      out += (out.empty() ? "" : ", ") + one;
    }
    return out.empty() ? "unknown" : out;
  }
  if (v.is_object()) return v.value("license", std::string("unknown"));
  return "unknown";
}

}  // namespace

std::string license_summary(const nlohmann::json& lic) {
  if (lic.is_string()) return lic.get<std::string>();
  if (!lic.is_object()) return "";
  return "weights: " + (lic.contains("weights") ? licence_text(lic["weights"]) : "unknown") +
         "; data: " + (lic.contains("data") ? licence_text(lic["data"]) : "unknown");
}

}  // namespace adtree::engine
