#include "imaging/emoji_dataset.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <utility>

#include "imaging/image_io.h"
#include "util/error.h"
#include "util/rng.h"

namespace adtree::imaging {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::vector<EmojiSource>& sources() {
  static const std::vector<EmojiSource> all = {
      {"google", "noto", "emoji-datasource-google", "Apache-2.0",
       "Noto Emoji images by Google (https://github.com/googlefonts/noto-emoji), licensed under "
       "the Apache License 2.0."},
      {"twitter", "twemoji", "emoji-datasource-twitter", "CC-BY-4.0",
       "Twemoji graphics by Twitter, Inc and other contributors "
       "(https://github.com/twitter/twemoji,"
       " maintained at https://github.com/jdecked/twemoji), licensed under CC BY 4.0 "
       "(https://creativecommons.org/licenses/by/4.0/)."},
  };
  return all;
}

// Unicode skin-tone modifiers, named as in CLDR.
const std::map<std::string, std::string>& skin_tones() {
  static const std::map<std::string, std::string> tones = {{"1F3FB", "light"},
                                                           {"1F3FC", "medium light"},
                                                           {"1F3FD", "medium"},
                                                           {"1F3FE", "medium dark"},
                                                           {"1F3FF", "dark"}};
  return tones;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// ASCII for the accented Latin-1 letters emoji names use ("Åland", "Curaçao", "Türkiye"); the
// caption vocabulary stays plain ASCII so prompts can be typed anywhere.
const char* fold_latin1(uint32_t cp) {
  static const char* table[64] = {
      "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i",  "i",   // C0-CF
      "d", "n", "o", "o", "o", "o", "o",  "",  "o", "u", "u", "u", "u", "y", "th", "ss",  // D0-DF
      "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i",  "i",   // E0-EF
      "d", "n", "o", "o", "o", "o", "o",  "",  "o", "u", "u", "u", "u", "y", "th", "y"};  // F0-FF
  if (cp >= 0xC0 && cp <= 0xFF) return table[cp - 0xC0];
  return "";
}

// Next code point of UTF-8 text; malformed bytes come back as U+FFFD one byte at a time.
uint32_t next_code_point(const std::string& s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  uint32_t cp = len == 1 ? b : b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 2) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  i += len;
  return cp;
}

std::string tone_phrase(const std::string& skin_key) {
  if (skin_key.empty()) return "";
  const auto& tones = skin_tones();
  std::vector<std::string> parts;
  for (size_t start = 0; start <= skin_key.size();) {
    size_t end = skin_key.find('-', start);
    if (end == std::string::npos) end = skin_key.size();
    const auto it = tones.find(upper(skin_key.substr(start, end - start)));
    if (it == tones.end()) throw Error("unknown skin tone '" + skin_key + "'");
    parts.push_back(it->second);
    start = end + 1;
  }
  if (parts.size() > 2) throw Error("unknown skin tone '" + skin_key + "'");
  if (parts.size() == 1 || parts[0] == parts[1]) return parts[0] + " skin tone";
  return parts[0] + " and " + parts[1] + " skin tones";
}

struct Item {
  at::Tensor image;
  std::string caption, style, unit;
};

struct Package {
  std::string root, set, version, license;
};

Package describe_package(const std::string& dir) {
  Package p;
  p.root = find_emoji_package_root(dir);
  const fs::path pj = fs::path(p.root) / "package.json";
  if (fs::exists(pj)) {
    json j;
    try {
      std::ifstream in(pj);
      j = json::parse(in);
    } catch (const json::exception& e) {
      throw Error(pj.string() + ": not valid JSON (" + e.what() + ")");
    }
    const std::string name = j.value("name", "");
    const std::string prefix = "emoji-datasource-";
    if (name.rfind(prefix, 0) != 0) {
      throw Error(pj.string() + ": package '" + name +
                  "' is not an emoji-datasource-<set> package");
    }
    p.set = name.substr(prefix.size());
    p.version = j.value("version", "unknown");
    p.license = j.value("license", "unknown");
  } else {
    // A package without package.json (hand-made fixtures): the set is the one folder under img/.
    std::vector<std::string> sets;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(p.root) / "img", ec)) {
      if (e.is_directory()) sets.push_back(e.path().filename().string());
    }
    if (sets.size() != 1) {
      throw Error(p.root + ": cannot tell which emoji set this is (no package.json and " +
                  std::to_string(sets.size()) + " folders under img/)");
    }
    p.set = sets[0];
    p.version = "unknown";
    p.license = "unknown";
  }
  emoji_source(p.set);  // refuse sets without an open licence before reading any image
  return p;
}

at::Tensor resize_area(const at::Tensor& rgb, int64_t size) {
  cv::Mat src(int(rgb.size(0)), int(rgb.size(1)), CV_8UC3, rgb.data_ptr<uint8_t>());
  cv::Mat dst;
  cv::resize(src, dst, cv::Size(int(size), int(size)), 0, 0, cv::INTER_AREA);
  auto out = at::empty({size, size, 3}, at::kByte);
  for (int r = 0; r < dst.rows; ++r) {
    std::memcpy(out.data_ptr<uint8_t>() + size_t(r) * size_t(size) * 3, dst.ptr(r),
                size_t(size) * 3);
  }
  return out;
}

// Everything one package contributes, with its skips counted by reason.
struct PackageResult {
  std::vector<Item> items;
  std::map<std::string, int64_t> skipped;
  std::map<std::string, std::vector<std::string>> examples;
  int64_t resized = 0;
};

void skip(PackageResult& r, const std::string& reason, const std::string& what) {
  ++r.skipped[reason];
  auto& ex = r.examples[reason];
  if (ex.size() < 5) ex.push_back(what);
}

json read_entries(const fs::path& ej) {
  json entries;
  try {
    std::ifstream in(ej);
    entries = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(ej.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!entries.is_array()) throw Error(ej.string() + ": expected a JSON array of emoji entries");
  return entries;
}

// One emoji entry's code and names (what its caption is made of).
struct EntryNames {
  std::string unit, name;
  std::vector<std::string> short_names;
};

// The entry's names, or false (skipped as a bad entry) when it has no code or no usable name.
bool read_names(PackageResult& res, const json& e, const std::string& where, EntryNames& out) {
  if (!e.is_object() || !e.contains("unified") || !e["unified"].is_string()) {
    skip(res, "bad_entry", where + " (no unified code)");
    return false;
  }
  out.unit = upper(e["unified"].get<std::string>());
  if (e.contains("name") && e["name"].is_string()) out.name = e["name"].get<std::string>();
  if (e.contains("short_names") && e["short_names"].is_array()) {
    for (const auto& s : e["short_names"]) {
      if (s.is_string()) out.short_names.push_back(s.get<std::string>());
    }
  }
  if (caption_words(out.name).empty() && out.short_names.empty()) {
    skip(res, "bad_entry", out.unit + " (no name)");
    return false;
  }
  return true;
}

// The entry itself (skin "") and its skin-tone variations, in file order.
std::vector<std::pair<std::string, const json*>> variants_of(const json& e) {
  std::vector<std::pair<std::string, const json*>> variants{{"", &e}};
  if (e.contains("skin_variations") && e["skin_variations"].is_object()) {
    for (const auto& [key, v] : e["skin_variations"].items()) variants.emplace_back(key, &v);
  }
  return variants;
}

// Where a package's pictures are and what an item from it looks like.
struct PackageImages {
  fs::path img_dir;    // img/<set>/64
  std::string flag;    // has_img_<set>: the variant is drawn in this set
  std::string style;   // the source's caption style word
  int64_t image_size;  // the dataset's picture size
};

// One variant's picture and caption into res.items, or a skip by reason.
void read_variant(PackageResult& res, const PackageImages& pi, const EntryNames& names,
                  const std::string& skin, const json& v) {
  const std::string id = skin.empty() ? names.unit : names.unit + " skin " + skin;
  if (!v.is_object() || !v.contains("image") || !v["image"].is_string()) {
    skip(res, "bad_entry", id + " (no image file name)");
    return;
  }
  if (!v.value(pi.flag, false)) {
    skip(res, "not_in_set", id);
    return;
  }
  const std::string file = v["image"].get<std::string>();
  if (file.find('/') != std::string::npos || file.find("..") != std::string::npos) {
    skip(res, "bad_entry", id + " (image name '" + file + "' leaves the image folder)");
    return;
  }
  const fs::path png = pi.img_dir / file;
  if (!fs::is_regular_file(png)) {
    skip(res, "missing_png", file);
    return;
  }
  Item item;
  try {
    item.caption = emoji_caption(names.name, names.short_names, skin, pi.style);
  } catch (const Error&) {
    skip(res, "bad_entry", id + " (unknown skin tone)");
    return;
  }
  try {
    item.image = read_image(png.string());
  } catch (const Error&) {
    skip(res, "unreadable_png", file);
    return;
  }
  if (item.image.size(0) != pi.image_size || item.image.size(1) != pi.image_size) {
    item.image = resize_area(item.image, pi.image_size);
    ++res.resized;
  }
  item.style = pi.style;
  item.unit = names.unit;
  res.items.push_back(std::move(item));
}

PackageResult read_package(const Package& pkg, const EmojiBuildOptions& opts) {
  const EmojiSource& src = emoji_source(pkg.set);
  const fs::path ej = fs::path(pkg.root) / "emoji.json";
  const json entries = read_entries(ej);
  const PackageImages pi{fs::path(pkg.root) / "img" / pkg.set / "64", "has_img_" + pkg.set,
                         src.style, opts.image_size};
  PackageResult res;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (opts.progress) opts.progress(pkg.set, int64_t(i), int64_t(entries.size()));
    const json& e = entries[i];
    const std::string where = ej.filename().string() + " entry " + std::to_string(i);
    EntryNames names;
    if (!read_names(res, e, where, names)) continue;
    for (const auto& [skin, v] : variants_of(e)) read_variant(res, pi, names, skin, *v);
  }
  return res;
}

}  // namespace

const EmojiSource& emoji_source(const std::string& set) {
  for (const auto& s : sources()) {
    if (s.set == set) return s;
  }
  std::string known;
  for (const auto& s : sources()) known += (known.empty() ? "" : ", ") + s.set;
  throw Error("emoji set '" + set +
              "' is not supported: its pictures have no open licence we can " +
              "train on (supported: " + known + ")");
}

std::string emoji_datasource_attribution() {
  return "Emoji names and code points from emoji-data by Cal Henderson "
         "(https://github.com/iamcal/emoji-data, npm emoji-datasource-*), MIT licence.";
}

std::vector<std::string> caption_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  const auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur));
    cur.clear();
  };
  for (size_t i = 0; i < text.size();) {
    const uint32_t cp = next_code_point(text, i);
    if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9')) {
      cur += char(cp);
    } else if (cp >= 'A' && cp <= 'Z') {
      cur += char(cp - 'A' + 'a');
    } else if (cp == '.' || cp == '\'' || cp == 0x2019) {
      // Abbreviations and elisions stay one word: "U.S." -> "us", "d'Ivoire" -> "divoire".
    } else if (*fold_latin1(cp) != '\0') {
      cur += fold_latin1(cp);
    } else {
      flush();
    }
  }
  flush();
  return words;
}

std::string emoji_caption(const std::string& name, const std::vector<std::string>& short_names,
                          const std::string& skin_key, const std::string& style) {
  std::vector<std::string> words = caption_words(name);
  std::set<std::string> seen(words.begin(), words.end());
  for (const auto& s : short_names) {
    for (auto& w : caption_words(s)) {
      if (seen.insert(w).second) words.push_back(std::move(w));
    }
  }
  std::string caption;
  for (const auto& w : words) caption += (caption.empty() ? "" : " ") + w;
  const std::string tone = tone_phrase(skin_key);
  if (!tone.empty()) caption += (caption.empty() ? "" : " ") + tone;
  for (const auto& w : caption_words(style)) caption += (caption.empty() ? "" : " ") + w;
  return caption;
}

std::string find_emoji_package_root(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error(dir + ": no such directory");
  for (const fs::path& p : {fs::path(dir), fs::path(dir) / "package"}) {
    if (fs::is_regular_file(p / "emoji.json")) return p.string();
  }
  throw Error(dir +
              ": not an emoji-datasource package (no emoji.json in it or in its package/ "
              "folder)");
}

namespace {

void check_build_options(const std::vector<std::string>& package_dirs,
                         const EmojiBuildOptions& opts) {
  if (!(opts.val_fraction >= 0.0 && opts.val_fraction < 1.0)) {
    throw Error("the validation fraction must be in [0, 1), got " +
                std::to_string(opts.val_fraction));
  }
  if (opts.image_size < 1 || opts.image_size > 4096) {
    throw Error("the image size must be in 1..4096, got " + std::to_string(opts.image_size));
  }
  if (package_dirs.empty()) throw Error("no emoji packages given");
}

// One package per set, so that each caption names one picture.
std::vector<Package> describe_packages(const std::vector<std::string>& package_dirs) {
  std::vector<Package> packages;
  for (const auto& dir : package_dirs) {
    Package p = describe_package(dir);
    for (const auto& q : packages) {
      if (q.set == p.set) {
        throw Error("the '" + p.set + "' set is given twice (" + q.root + " and " + p.root +
                    "): one package per set, so that each caption names one picture");
      }
    }
    packages.push_back(std::move(p));
  }
  return packages;
}

// Every package's usable images, with what each package is and what was skipped.
struct Gathered {
  std::vector<Item> items;
  json sources_info = json::array();
  std::map<std::string, int64_t> skipped;  // reason -> count, over all packages
  json examples = json::object();          // reason -> up to 5 examples
  int64_t resized = 0;
};

Gathered read_packages(const std::vector<Package>& packages, const EmojiBuildOptions& opts,
                       const std::function<void(const std::string&)>& log) {
  Gathered g;
  for (const auto& pkg : packages) {
    const EmojiSource& src = emoji_source(pkg.set);
    log("reading " + src.package + " " + pkg.version + " (" + pkg.root + ")");
    PackageResult r = read_package(pkg, opts);
    int64_t n_skipped = 0;
    for (const auto& [reason, n] : r.skipped) {
      g.skipped[reason] += n;
      n_skipped += n;
      for (const auto& ex : r.examples[reason]) {
        if (g.examples[reason].size() < 5) g.examples[reason].push_back(pkg.set + ": " + ex);
      }
    }
    g.resized += r.resized;
    g.sources_info.push_back({{"package", src.package},
                              {"version", pkg.version},
                              {"package_license", pkg.license},
                              {"set", pkg.set},
                              {"style", src.style},
                              {"images_license", src.images_license},
                              {"attribution", src.attribution},
                              {"images", r.items.size()},
                              {"skipped", r.skipped}});
    log("  " + std::to_string(r.items.size()) + " images, " + std::to_string(n_skipped) +
        " skipped");
    for (auto& it : r.items) g.items.push_back(std::move(it));
  }
  if (g.items.empty()) {
    throw Error("no usable images in the emoji packages given (skipped: " + json(g.skipped).dump() +
                ")");
  }
  return g;
}

// The split of the split units (emoji codes): each unit's id, its code and its split.
struct UnitSplit {
  std::map<std::string, int64_t> unit_id;
  std::vector<std::string> units;  // by id: codes in code order
  std::vector<uint8_t> split;      // by id: io::Split
};

// Split units in code order, then a seeded shuffle: the split depends on the seed and the emoji
// codes only, not on package order or on which images happened to be readable.
UnitSplit split_units(const std::vector<Item>& items, const EmojiBuildOptions& opts) {
  UnitSplit u;
  for (const auto& it : items) u.unit_id.emplace(it.unit, 0);
  for (auto& [code, id] : u.unit_id) {
    id = static_cast<int64_t>(u.units.size());
    u.units.push_back(code);
  }
  const auto n_units = static_cast<int64_t>(u.units.size());
  std::vector<int64_t> order(u.units.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  Rng rng(opts.seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
  int64_t n_val = std::llround(opts.val_fraction * double(n_units));
  // A non-zero fraction always yields a validation set, and never swallows every emoji.
  if (opts.val_fraction > 0 && n_units >= 2) n_val = std::clamp<int64_t>(n_val, 1, n_units - 1);
  u.split.assign(u.units.size(), uint8_t(io::Split::Train));
  for (int64_t k = 0; k < n_val; ++k) {
    u.split[size_t(order[size_t(k)])] = uint8_t(io::Split::Validation);
  }
  return u;
}

// The dataset's rows, one per item; `caption_count` receives how often each caption occurs.
io::Dataset dataset_rows(std::vector<Item>& items, const UnitSplit& u,
                         std::map<std::string, int64_t>& caption_count) {
  io::Dataset d;
  std::vector<at::Tensor> images;
  for (auto& it : items) {
    const int64_t id = u.unit_id.at(it.unit);
    images.push_back(it.image);
    d.captions.push_back(it.caption);
    d.style.push_back(it.style);
    d.emoji.push_back(id);
    d.split.push_back(u.split[size_t(id)]);
    ++caption_count[it.caption];
  }
  d.images = at::stack(images).contiguous();
  return d;
}

// The dataset's description: how it was built, its sources and licences, its counts.
json dataset_info(const io::Dataset& d, const Gathered& g, const UnitSplit& u,
                  const std::map<std::string, int64_t>& caption_count,
                  const EmojiBuildOptions& opts) {
  json duplicates = json::array();
  for (const auto& [c, n] : caption_count) {
    if (n > 1 && duplicates.size() < 20) duplicates.push_back(c);
  }
  std::set<int64_t> train_units, val_units;
  for (size_t i = 0; i < d.emoji.size(); ++i) {
    (d.split[i] ? val_units : train_units).insert(d.emoji[i]);
  }
  int64_t n_skipped = 0;
  for (const auto& [reason, n] : g.skipped) n_skipped += n;
  return {
      {"name", "emoji" + std::to_string(opts.image_size)},
      {"builder", "adtree data emoji"},
      {"image_size", opts.image_size},
      {"seed", opts.seed},
      {"val_fraction", opts.val_fraction},
      {"sources", g.sources_info},
      {"metadata_attribution", emoji_datasource_attribution()},
      {"metadata_license", "MIT"},
      {"caption_rule",
       "name words, then short-name words not in the name, then the skin tone, then the style "
       "word"},
      {"counts",
       {{"images", d.size()},
        {"emoji", static_cast<int64_t>(u.units.size())},
        {"captions", caption_count.size()},
        {"train", d.count(io::Split::Train)},
        {"validation", d.count(io::Split::Validation)},
        {"train_emoji", train_units.size()},
        {"validation_emoji", val_units.size()},
        {"resized", g.resized},
        {"skipped", n_skipped}}},
      {"skipped", g.skipped},
      {"skipped_examples", g.examples},
      {"duplicate_captions", duplicates},
      {"emoji_codes", u.units},
  };
}

}  // namespace

io::Dataset build_emoji_dataset(const std::vector<std::string>& package_dirs,
                                const EmojiBuildOptions& opts) {
  check_build_options(package_dirs, opts);
  const auto log = [&](const std::string& line) {
    if (opts.log) opts.log(line);
  };
  const std::vector<Package> packages = describe_packages(package_dirs);
  Gathered g = read_packages(packages, opts, log);
  const UnitSplit u = split_units(g.items, opts);
  std::map<std::string, int64_t> caption_count;
  io::Dataset d = dataset_rows(g.items, u, caption_count);
  d.info = dataset_info(d, g, u, caption_count, opts);
  return d;
}

at::Tensor image_grid(const at::Tensor& images_in, int64_t cols, int64_t scale, int64_t gap) {
  if (images_in.dim() != 4 || images_in.size(3) != 3 || images_in.scalar_type() != at::kByte) {
    throw Error("image_grid expects uint8 images [N, H, W, 3]");
  }
  if (images_in.size(0) == 0) throw Error("image_grid needs at least one image");
  cols = std::max<int64_t>(1, std::min(cols, images_in.size(0)));
  scale = std::max<int64_t>(1, scale);
  gap = std::max<int64_t>(0, gap);
  auto images = images_in.to(at::kCPU);
  if (scale > 1) images = images.repeat_interleave(scale, 1).repeat_interleave(scale, 2);
  const int64_t n = images.size(0), h = images.size(1), w = images.size(2);
  const int64_t rows = (n + cols - 1) / cols;
  auto sheet = at::full({rows * (h + gap) + gap, cols * (w + gap) + gap, 3}, 128, at::kByte);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = gap + (i / cols) * (h + gap), x = gap + (i % cols) * (w + gap);
    sheet.slice(0, y, y + h).slice(1, x, x + w).copy_(images[i]);
  }
  return sheet;
}

}  // namespace adtree::imaging
