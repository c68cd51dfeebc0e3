#include "io/manifest.h"

#include <fstream>
#include <sstream>

#include "io/file_write.h"
#include "util/error.h"

namespace adtree::io {

nlohmann::json Manifest::to_json() const {
  nlohmann::json j{{"format", "adtree-model"},
                   {"format_version", kFormatVersion},
                   {"name", name},
                   {"kind", kind},
                   {"description", description},
                   {"grid", {grid_h, grid_w}},
                   {"codebook_size", codebook_size},
                   {"gpt", gpt},
                   {"vq", vq},
                   {"sampling", sampling.is_null() ? nlohmann::json::object() : sampling},
                   {"license", license},
                   {"provenance", provenance}};
  if (!drafter.is_null()) j["drafter"] = drafter;
  if (!text_encoder.empty()) j["text_encoder"] = text_encoder;
  return j;
}

void Manifest::save(const std::string& dir) const {
  const std::string path = dir + "/model.json";
  write_file(path, to_json().dump(2) + "\n", "the manifest");
}

Manifest Manifest::load(const std::string& dir) {
  const std::string path = dir + "/model.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the model manifest (is this a model directory?)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(path + ": cannot read the model manifest");
  return parse(text.str(), path);
}

Manifest Manifest::parse(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
  std::vector<std::string> problems;
  auto need = [&](const char* key, auto pred, const char* what) {
    if (!j.contains(key)) {
      problems.push_back(std::string("missing '") + key + "'");
      return false;
    }
    if (!pred(j[key])) {
      problems.push_back(std::string("'") + key + "' must be " + what);
      return false;
    }
    return true;
  };
  auto is_obj = [](const nlohmann::json& v) { return v.is_object(); };
  auto is_str = [](const nlohmann::json& v) { return v.is_string(); };
  auto is_int = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<int64_t>() > 0;
  };
  auto is_grid = [](const nlohmann::json& v) {
    return v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer() &&
           v[0].get<int64_t>() > 0 && v[1].get<int64_t>() > 0;
  };
  if (!j.is_object()) throw Error(path + ": the manifest must be a JSON object");
  Manifest m;
  // Not j.value("format", ...): that throws a JSON type error when "format" is not a string
  // (found by fuzzing, docs/reliability.md "Fuzzing").
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || *format != "adtree-model") {
    problems.push_back("'format' must be \"adtree-model\"");
  }
  if (j.contains("format_version") && (!j["format_version"].is_number_integer() ||
                                       j["format_version"].get<int64_t>() > kFormatVersion)) {
    problems.push_back("'format_version' is newer than this program understands (" +
                       std::to_string(kFormatVersion) + ")");
  }
  if (need("name", is_str, "a string")) m.name = j["name"];
  if (need("kind", is_str, "a string")) {
    m.kind = j["kind"];
    if (m.kind != "c2i" && m.kind != "t2i-words" && m.kind != "t2i-embeddings") {
      problems.push_back("'kind' must be c2i, t2i-words or t2i-embeddings, not '" + m.kind + "'");
    }
  }
  if (need("grid", is_grid, "[h, w] with positive integers")) {
    m.grid_h = j["grid"][0];
    m.grid_w = j["grid"][1];
  }
  if (need("codebook_size", is_int, "a positive integer")) m.codebook_size = j["codebook_size"];
  if (need("gpt", is_obj, "an object")) m.gpt = j["gpt"];
  if (need("vq", is_obj, "an object")) m.vq = j["vq"];
  if (j.contains("drafter") && !j["drafter"].is_null()) {
    if (j["drafter"].is_object())
      m.drafter = j["drafter"];
    else
      problems.push_back("'drafter' must be an object");
  }
  if (j.contains("sampling")) {
    if (j["sampling"].is_object())
      m.sampling = j["sampling"];
    else
      problems.push_back("'sampling' must be an object");
  }
  m.license = j.value("license", nlohmann::json());
  m.provenance = j.value("provenance", nlohmann::json());
  if (j.contains("description") && j["description"].is_string()) m.description = j["description"];
  if (j.contains("text_encoder")) {
    if (j["text_encoder"].is_string() && m.kind == "t2i-embeddings")
      m.text_encoder = j["text_encoder"];
    else
      problems.push_back(
          "'text_encoder' must be a T5 directory's path, for a t2i-embeddings model");
  }
  if (!problems.empty()) {
    std::string msg = path + ": invalid manifest:";
    for (const auto& p : problems) msg += "\n  - " + p;
    throw Error(msg);
  }
  return m;
}

}  // namespace adtree::io
