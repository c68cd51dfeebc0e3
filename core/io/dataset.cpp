#include "io/dataset.h"

#include <cstring>
#include <map>
#include <utility>

#include "io/safetensors.h"
#include "util/error.h"

namespace adtree::io {

namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "adtree-dataset";
constexpr const char* kVersion = "1";

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  throw Error("Invalid dataset file '" + where + "': " + problem + ".");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const std::string& meta(const std::string& path, const std::map<std::string, std::string>& m,
                        const std::string& key) {
  const auto it = m.find(key);
  if (it == m.end()) fail(path, "metadata \"" + key + "\" is missing");
  return it->second;
}

json parse_meta_json(const std::string& path, const std::string& key, const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(path, "metadata \"" + key + "\" is not valid JSON (" + e.what() + ")");
  }
}

std::vector<std::string> string_array(const std::string& path, const std::string& key,
                                      const std::string& text) {
  const json j = parse_meta_json(path, key, text);
  if (!j.is_array()) fail(path, "metadata \"" + key + "\" must be a JSON array of strings");
  std::vector<std::string> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) {
      fail(path, "metadata \"" + key + "\" entry " + std::to_string(i) + " is a " +
                     j[i].type_name() + ", not a string");
    }
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

const TensorInfo& tensor_info(const std::string& path, const SafetensorsReader& r,
                              const std::string& name, DType dtype, size_t rank) {
  const TensorInfo* t = r.find(name);
  if (t == nullptr) fail(path, "tensor '" + name + "' is missing");
  if (t->dtype != dtype) {
    fail(path, "tensor '" + name + "' has dtype " + dtype_name(t->dtype) + ", expected " +
                   dtype_name(dtype));
  }
  if (t->shape.size() != rank) {
    fail(path, "tensor '" + name + "' has shape " + shape_text(t->shape) + ", expected rank " +
                   std::to_string(rank));
  }
  return *t;
}

}  // namespace

std::string split_name(Split s) {
  return s == Split::Train ? "train" : "validation";
}

int64_t Dataset::count(Split s) const {
  int64_t n = 0;
  for (uint8_t v : split) n += v == static_cast<uint8_t>(s);
  return n;
}

std::vector<int64_t> Dataset::indices(Split s) const {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < split.size(); ++i) {
    if (split[i] == static_cast<uint8_t>(s)) rows.push_back(static_cast<int64_t>(i));
  }
  return rows;
}

Dataset Dataset::subset(Split s) const {
  return select(indices(s));
}

Dataset Dataset::select(const std::vector<int64_t>& rows) const {
  Dataset out;
  for (int64_t r : rows) {
    if (r < 0 || r >= size()) {
      throw Error("dataset row " + std::to_string(r) + " is out of range (the dataset has " +
                  std::to_string(size()) + " images)");
    }
    const auto i = static_cast<size_t>(r);
    out.captions.push_back(captions[i]);
    out.emoji.push_back(emoji[i]);
    out.style.push_back(style[i]);
    out.split.push_back(split[i]);
  }
  auto idx = at::tensor(rows, at::TensorOptions().dtype(at::kLong));
  if (images.defined()) out.images = images.index_select(0, idx).contiguous();
  if (codes.defined()) out.codes = codes.index_select(0, idx).contiguous();
  out.codes_vq = codes_vq;
  out.info = info;
  return out;
}

void Dataset::require_images(const std::string& who) const {
  if (!images.defined())
    throw Error(who +
                " needs the pictures, and this is a codes dataset ('adtree data codes' "
                "keeps only their VQ codes): give it the picture dataset");
}

void Dataset::validate(const std::string& where) const {
  if (images.defined() == codes.defined()) fail(where, "it needs either images or codes");
  int64_t n = 0;
  if (images.defined()) {
    if (images.scalar_type() != at::kByte) fail(where, "images must be uint8");
    const auto shape = images.sizes().vec();
    if (shape.size() != 4 || shape[3] != 3 || shape[1] < 1 || shape[2] < 1) {
      fail(where, "images have shape " + shape_text(shape) + ", expected [N, H, W, 3]");
    }
    n = shape[0];
  } else {
    if (codes.scalar_type() != at::kShort) fail(where, "codes must be int16");
    const auto shape = codes.sizes().vec();
    if (shape.size() != 3 || shape[1] < 1 || shape[2] < 1)
      fail(where, "codes have shape " + shape_text(shape) + ", expected [N, h, w]");
    if (codes.numel() > 0 && codes.min().item<int64_t>() < 0)
      fail(where, "codes must not be negative");
    if (codes_vq.empty()) fail(where, "codes need the fingerprint of the VQ that made them");
    n = shape[0];
  }
  const auto agree = [&](size_t got, const char* what) {
    if (static_cast<int64_t>(got) != n) {
      fail(where,
           "it has " + std::to_string(n) + " images but " + std::to_string(got) + " " + what);
    }
  };
  agree(captions.size(), "captions");
  agree(emoji.size(), "emoji ids");
  agree(style.size(), "styles");
  agree(split.size(), "split entries");
  for (size_t i = 0; i < split.size(); ++i) {
    if (split[i] > 1) {
      fail(where, "split entry " + std::to_string(i) + " is " + std::to_string(split[i]) +
                      " (0 = train, 1 = validation)");
    }
  }
  if (!info.is_object()) fail(where, "info must be a JSON object");
}

Dataset Dataset::load(const std::string& path) {
  const SafetensorsReader r(path);  // reports unreadable and corrupt files itself
  const auto& m = r.metadata();
  if (m.find("format") == m.end() || m.at("format") != kFormat) {
    fail(path, "not an adtree dataset (metadata \"format\" is not \"" + std::string(kFormat) +
                   "\"); make one with 'adtree data emoji'");
  }
  if (meta(path, m, "version") != kVersion) {
    fail(path, "format version " + m.at("version") + " is not supported (this build reads " +
                   kVersion + ")");
  }
  const bool coded = r.find("codes") != nullptr;
  const auto& img = coded ? tensor_info(path, r, "codes", DType::I16, 3)
                          : tensor_info(path, r, "images", DType::U8, 4);
  const auto& emo = tensor_info(path, r, "emoji", DType::I64, 1);
  const auto& spl = tensor_info(path, r, "split", DType::U8, 1);
  if (!coded && img.shape[3] != 3) {
    fail(path, "tensor 'images' has shape " + shape_text(img.shape) + ", expected [N, H, W, 3]");
  }
  for (const TensorInfo* t : {&emo, &spl}) {
    if (t->shape[0] != img.shape[0]) {
      fail(path, "tensor '" + img.name + "' holds " + std::to_string(img.shape[0]) +
                     " pictures but '" + t->name + "' has " + std::to_string(t->shape[0]) +
                     " entries");
    }
  }

  Dataset d;
  d.captions = string_array(path, "captions", meta(path, m, "captions"));
  d.style = string_array(path, "styles", meta(path, m, "styles"));
  d.info = parse_meta_json(path, "info", meta(path, m, "info"));
  if (coded) {
    d.codes = r.tensor("codes");
    d.codes_vq = meta(path, m, "codes_vq");
  } else {
    d.images = r.tensor("images");
  }
  const auto emoji_t = r.tensor("emoji");
  d.emoji.assign(emoji_t.data_ptr<int64_t>(), emoji_t.data_ptr<int64_t>() + emoji_t.numel());
  const auto split_t = r.tensor("split");
  d.split.assign(split_t.data_ptr<uint8_t>(), split_t.data_ptr<uint8_t>() + split_t.numel());
  d.validate(path);
  return d;
}

void Dataset::save(const std::string& path) const {
  validate(path);
  const auto opts = at::TensorOptions().dtype(at::kLong);
  auto emoji_t = at::empty({size()}, opts);
  if (size() > 0) std::memcpy(emoji_t.data_ptr<int64_t>(), emoji.data(), emoji.size() * 8);
  auto split_t = at::empty({size()}, at::TensorOptions().dtype(at::kByte));
  if (size() > 0) std::memcpy(split_t.data_ptr<uint8_t>(), split.data(), split.size());
  std::map<std::string, std::string> metadata{{"format", kFormat}, {"version", kVersion}};
  try {
    metadata["captions"] = json(captions).dump();
    metadata["styles"] = json(style).dump();
    metadata["info"] = info.dump();
  } catch (const json::exception&) {
    throw Error("Cannot write dataset file '" + path +
                "': a caption, style or info string is "
                "not valid UTF-8.");
  }
  if (codes.defined()) metadata["codes_vq"] = codes_vq;
  write_safetensors(path,
                    {{codes.defined() ? "codes" : "images", codes.defined() ? codes : images},
                     {"emoji", emoji_t},
                     {"split", split_t}},
                    metadata);
}

}  // namespace adtree::io
