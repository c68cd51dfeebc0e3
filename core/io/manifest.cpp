#include "io/manifest.h"

#include <fstream>
#include <sstream>

#include "io/file_write.h"
#include "util/error.h"

namespace adtree::io {

namespace {

nlohmann::json parse_json(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

// The manifest's problems so far, and the check of one required key.
struct Problems {
  const nlohmann::json& j;
  std::vector<std::string> list;

  bool need(const char* key, bool (*pred)(const nlohmann::json&), const char* what) {
    if (!j.contains(key)) {
      list.push_back(std::string("missing '") + key + "'");
      return false;
    }
    if (!pred(j[key])) {
      list.push_back(std::string("'") + key + "' must be " + what);
      return false;
    }
    return true;
  }
};

bool is_obj(const nlohmann::json& v) {
  return v.is_object();
}
bool is_str(const nlohmann::json& v) {
  return v.is_string();
}
bool is_int(const nlohmann::json& v) {
  return v.is_number_integer() && v.get<int64_t>() > 0;
}
bool is_grid(const nlohmann::json& v) {
  return v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer() &&
         v[0].get<int64_t>() > 0 && v[1].get<int64_t>() > 0;
}

// "format" must name this format; "format_version", when present, one this program reads.
void check_format(Problems& p) {
  const nlohmann::json& j = p.j;
  // Not j.value("format", ...): that throws a JSON type error when "format" is not a string
  // (found by fuzzing, docs/reliability.md "Fuzzing").
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || *format != "adtree-model") {
    p.list.push_back("'format' must be \"adtree-model\"");
  }
  if (j.contains("format_version") &&
      (!j["format_version"].is_number_integer() ||
       j["format_version"].get<int64_t>() > Manifest::kFormatVersion)) {
    p.list.push_back("'format_version' is newer than this program understands (" +
                     std::to_string(Manifest::kFormatVersion) + ")");
  }
}

// name, kind, grid, codebook_size, gpt and vq.
void read_required(Problems& p, Manifest& m) {
  const nlohmann::json& j = p.j;
  if (p.need("name", is_str, "a string")) m.name = j["name"];
  if (p.need("kind", is_str, "a string")) {
    m.kind = j["kind"];
    if (m.kind != "c2i" && m.kind != "t2i-words" && m.kind != "t2i-embeddings") {
      p.list.push_back("'kind' must be c2i, t2i-words or t2i-embeddings, not '" + m.kind + "'");
    }
  }
  if (p.need("grid", is_grid, "[h, w] with positive integers")) {
    m.grid_h = j["grid"][0];
    m.grid_w = j["grid"][1];
  }
  if (p.need("codebook_size", is_int, "a positive integer")) m.codebook_size = j["codebook_size"];
  if (p.need("gpt", is_obj, "an object")) m.gpt = j["gpt"];
  if (p.need("vq", is_obj, "an object")) m.vq = j["vq"];
}

// drafter, sampling, license, provenance, description and text_encoder (after kind).
void read_optional(Problems& p, Manifest& m) {
  const nlohmann::json& j = p.j;
  if (j.contains("parallel_head") && !j["parallel_head"].is_null()) {
    const auto& ph = j["parallel_head"];
    if (ph.is_object() && ph.value("kind", "") == "parallel" && ph.contains("depths") &&
        ph["depths"].is_number_integer() && ph["depths"].get<int64_t>() >= 1 &&
        ph["depths"].get<int64_t>() <= 64)
      m.parallel_head = ph;
    else
      p.list.push_back("'parallel_head' must be {\"kind\": \"parallel\", \"depths\": 1..64}");
  }
  if (j.contains("drafter") && !j["drafter"].is_null()) {
    if (j["drafter"].is_object())
      m.drafter = j["drafter"];
    else
      p.list.push_back("'drafter' must be an object");
  }
  if (j.contains("sampling")) {
    if (j["sampling"].is_object())
      m.sampling = j["sampling"];
    else
      p.list.push_back("'sampling' must be an object");
  }
  m.license = j.value("license", nlohmann::json());
  m.provenance = j.value("provenance", nlohmann::json());
  if (j.contains("description") && j["description"].is_string()) m.description = j["description"];
  if (j.contains("text_encoder")) {
    if (j["text_encoder"].is_string() && m.kind == "t2i-embeddings")
      m.text_encoder = j["text_encoder"];
    else
      p.list.push_back("'text_encoder' must be a T5 directory's path, for a t2i-embeddings model");
  }
}

}  // namespace

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
  if (!parallel_head.is_null()) j["parallel_head"] = parallel_head;
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
  const nlohmann::json j = parse_json(text, path);
  if (!j.is_object()) throw Error(path + ": the manifest must be a JSON object");
  Problems problems{j, {}};
  Manifest m;
  check_format(problems);
  read_required(problems, m);
  read_optional(problems, m);
  if (!problems.list.empty()) {
    std::string msg = path + ": invalid manifest:";
    for (const auto& p : problems.list) msg += "\n  - " + p;
    throw Error(msg);
  }
  return m;
}

}  // namespace adtree::io
