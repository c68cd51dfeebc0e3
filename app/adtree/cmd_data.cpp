// adtree data emoji: the emoji training set, from the npm packages emoji-datasource-google and
// emoji-datasource-twitter (fetched with `npm pack`, the only network use in the project) or from
// packages already extracted on disk.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "io/checksum.h"
#include "io/dataset.h"
#include "terminal_progress.h"
#include "train/gpt_trainer.h"
#include "train/vq_trainer.h"
#include "util/error.h"
#include "util/resource_paths.h"
#include "util/rng.h"
#ifdef ADTREE_HAVE_IMAGING
#include "imaging/emoji_dataset.h"
#include "imaging/image_io.h"
#endif

namespace adtree::cli {

namespace {

namespace fs = std::filesystem;

// Pinned so that a dataset (and every model trained on it) can be rebuilt exactly. 16.0.0 is the
// newest release published for both sets.
constexpr const char* kEmojiVersion = "16.0.0";

void print_data_usage() {
  std::cout << "Usage: adtree data <dataset> [OPTIONS]\n\n"
               "Build training datasets.\n\n"
               "Datasets:\n"
               "  emoji   64x64 emoji pictures with captions (npm emoji-datasource-google and\n"
               "          emoji-datasource-twitter "
            << kEmojiVersion
            << ")\n\n"
               "  codes   the VQ codes of a picture dataset, with its captions and split: what\n"
               "          the GPT and draft-head trainers read, small enough to travel\n\n"
               "Run 'adtree data emoji --help' or 'adtree data codes --help' for the options.\n";
}

#ifdef ADTREE_HAVE_IMAGING  // the npm download feeds the picture builder only
std::string default_cache_dir() {
  const std::string root = util::user_cache_dir();
  if (root.empty()) {
    throw Error(
        "cannot find a cache folder ($HOME and $XDG_CACHE_HOME are unset): pass --cache DIR");
  }
  return root + "/npm";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command's exit status, or 128 + signal when it was killed (as shells report it).
int run_shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  if (rc == -1) throw Error("cannot start a shell to run: " + cmd);
  if (WIFEXITED(rc)) return WEXITSTATUS(rc);
  if (WIFSIGNALED(rc)) return 128 + WTERMSIG(rc);
  return rc;
}

// Whether the extracted package still holds what was extracted: the marker's checksum of its
// files (a marker without one, from an older program, is trusted as before).
bool cached_package_intact(const fs::path& dir, const fs::path& marker) {
  std::ifstream in(marker);
  std::string first, algo, sum;
  std::getline(in, first);
  if (!(in >> algo >> sum)) return true;
  try {
    return algo == io::checksum_name() && io::directory_checksum((dir / "package").string()) == sum;
  } catch (const Error&) {
    return false;
  }
}

// Fetches and unpacks one package into the cache (once); returns the extracted package folder.
std::string fetch_package(const std::string& set, const fs::path& cache) {
  const std::string package = "emoji-datasource-" + set;
  const std::string base = package + "-" + kEmojiVersion;
  const fs::path dir = cache / base;
  const fs::path done = dir / ".adtree-complete";
  std::error_code ec;
  if (fs::exists(done)) {
    if (cached_package_intact(dir, done)) {
      std::cout << "using cached " << package << "@" << kEmojiVersion << " (" << dir.string()
                << ")\n";
      return (dir / "package").string();
    }
    std::cerr << "adtree data: warning: the cached package " << dir.string()
              << " has changed since it was extracted (damaged?): extracting it again\n";
    fs::remove(done, ec);
  }
  fs::create_directories(cache, ec);
  if (ec) throw Error(cache.string() + ": cannot create the cache folder (" + ec.message() + ")");

  const fs::path tgz = cache / (base + ".tgz");
  if (!fs::exists(tgz)) {
    std::cout << "fetching " << package << "@" << kEmojiVersion << " with npm pack (~70 MB)\n"
              << std::flush;
    const int rc =
        run_shell("npm pack --loglevel=error --pack-destination " + shell_quote(cache.string()) +
                  " " + shell_quote(package + "@" + kEmojiVersion) + " > /dev/null");
    if (rc == 127) {
      throw Error(
          "npm is not installed (install nodejs and npm, e.g. tools/install-deps.sh), or "
          "pass --from DIR with extracted packages");
    }
    if (rc != 0) {
      fs::remove(tgz, ec);
      throw Error("'npm pack " + package + "@" + kEmojiVersion + "' failed with exit status " +
                  std::to_string(rc) + " (is the npm registry reachable?)");
    }
    if (!fs::exists(tgz)) {
      throw Error("'npm pack " + package + "@" + kEmojiVersion + "' did not write " + tgz.string());
    }
  }

  // Only what the builder reads: the sprite sheets and other sizes would triple the disk use.
  const fs::path partial = cache / (base + ".partial");
  fs::remove_all(partial, ec);
  fs::create_directories(partial, ec);
  if (ec) throw Error(partial.string() + ": cannot create the folder (" + ec.message() + ")");
  const std::string members =
      "package/package.json package/emoji.json package/LICENSE "
      "package/img/" +
      set + "/64";
  const int rc = run_shell("tar -xzf " + shell_quote(tgz.string()) + " -C " +
                           shell_quote(partial.string()) + " " + members);
  if (rc != 0) {
    fs::remove_all(partial, ec);
    fs::remove(tgz, ec);
    throw Error("'tar -xzf " + tgz.string() + "' failed with exit status " + std::to_string(rc) +
                " (damaged download?); the file was removed, run the command again to fetch it "
                "anew");
  }
  fs::remove_all(dir, ec);
  fs::rename(partial, dir, ec);
  if (ec)
    throw Error(dir.string() + ": cannot move the extracted package there (" + ec.message() + ")");
  // Sealed with a checksum of what was extracted, checked at every reuse.
  const std::string sum = io::directory_checksum((dir / "package").string());
  std::ofstream marker(done);
  marker << package << "@" << kEmojiVersion << "\n" << io::checksum_name() << " " << sum << "\n";
  if (!marker.flush()) throw Error(done.string() + ": cannot write (is the cache folder full?)");
  fs::remove(tgz, ec);  // the extracted folder is all later runs need
  return (dir / "package").string();
}

void print_summary(const io::Dataset& d, const std::string& out) {
  const auto& c = d.info["counts"];
  std::map<std::string, int64_t> per_style;
  for (const auto& s : d.style) ++per_style[s];
  std::string styles;
  for (const auto& [s, n] : per_style) {
    styles += (styles.empty() ? "" : ", ") + s + " " + std::to_string(n);
  }
  std::cout << "images      " << d.size() << " (" << styles << "), " << d.images.size(1) << "x"
            << d.images.size(2) << " RGB on white\n"
            << "emoji       " << c["emoji"].get<int64_t>() << "\n"
            << "captions    " << c["captions"].get<int64_t>() << " distinct\n"
            << "train       " << c["train"].get<int64_t>() << " images, "
            << c["train_emoji"].get<int64_t>() << " emoji\n"
            << "validation  " << c["validation"].get<int64_t>() << " images, "
            << c["validation_emoji"].get<int64_t>() << " emoji\n";
  std::cout << "skipped     " << c["skipped"].get<int64_t>();
  std::string reasons;
  for (const auto& [reason, n] : d.info["skipped"].items()) {
    reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n.get<int64_t>());
  }
  if (!reasons.empty()) std::cout << " (" << reasons << ")";
  std::cout << "\n";
  for (const auto& [reason, ex] : d.info["skipped_examples"].items()) {
    std::cout << "  " << reason << ", e.g. " << ex.dump() << "\n";
  }
  if (c["resized"].get<int64_t>() > 0) {
    std::cout << "resized     " << c["resized"].get<int64_t>() << " images\n";
  }
  if (!d.info["duplicate_captions"].empty()) {
    std::cout << "warning: some captions name more than one picture, e.g. "
              << d.info["duplicate_captions"].dump() << "\n";
  }
  std::cout << "licences    ";
  for (const auto& s : d.info["sources"]) {
    std::cout << s["style"].get<std::string>() << " " << s["images_license"].get<std::string>()
              << ", ";
  }
  std::cout << "emoji-datasource " << d.info["metadata_license"].get<std::string>()
            << " (attribution in the file's info)\n"
            << "wrote " << fs::absolute(out).string() << "\n";
}

// 64 random training pictures on one sheet, their captions on stdout, to check the data by eye.
void write_preview(const io::Dataset& d, const std::string& path, uint64_t seed) {
  auto rows = d.indices(io::Split::Train);
  if (rows.empty()) rows = d.indices(io::Split::Validation);
  Rng rng(seed ^ 0x5eedULL);
  for (size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[rng.next() % i]);
  rows.resize(std::min<size_t>(rows.size(), 64));
  constexpr int64_t kCols = 8;
  auto sheet = imaging::image_grid(d.select(rows).images, kCols, 2, 4);
  imaging::write_image(path, sheet);
  std::cout << "preview " << fs::absolute(path).string() << " (row, column: caption)\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    std::cout << "  " << i / kCols + 1 << "," << i % kCols + 1 << ": "
              << d.captions[size_t(rows[i])] << "\n";
  }
}
#endif

int data_emoji(int argc, char** argv) {
  // --from may repeat, which Args does not model: take those out before parsing.
  std::vector<std::string> from;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--from") {
      if (i + 1 >= argc) throw Error("option '--from' needs a value (DIR)");
      from.push_back(argv[++i]);
    } else if (arg.rfind("--from=", 0) == 0) {
      from.push_back(arg.substr(7));
    } else {
      rest.push_back(argv[i]);
    }
  }
  Args a(
      "data emoji",
      std::string("Build the emoji dataset: 64x64 pictures (alpha on white) of the Noto (google) "
                  "and Twemoji (twitter) sets from npm emoji-datasource-<set>@") +
          kEmojiVersion +
          ", captioned from the emoji names plus a style word, split train/validation by "
          "emoji. Writes one safetensors file.");
  a.option("out", "FILE", "dataset file to write (a folder gets emoji64.safetensors)")
      .option("cache", "DIR", "where npm packages are kept ($XDG_CACHE_HOME/adtree-studio/npm)")
      .option("sets", "LIST", "sets to fetch, comma-separated", "google,twitter")
      .option("from", "DIR", "use an extracted package instead of fetching (repeat per set)")
      .option("val-fraction", "F", "share of emoji held out for validation", "0.05")
      .option("seed", "N", "seed of the train/validation split", "0")
      .option("preview", "FILE", "also write a PNG of 64 random training images (captions printed)")
      .flag("quiet", "no progress line on the terminal");
  if (!a.parse(int(rest.size()), rest.data())) return 0;
  if (!a.given("out")) throw Error("give the dataset file to write with --out FILE");
  const double val_fraction = a.number("val-fraction");
  if (!(val_fraction >= 0 && val_fraction < 1)) throw Error("--val-fraction must be in [0, 1)");
  const auto seed = a.non_negative("seed");
#ifndef ADTREE_HAVE_IMAGING
  (void)seed;
  throw Error("this build cannot read images (OpenCV was not found at build time)");
#else
  std::string out = a.str("out");
  if (fs::is_directory(out) || (!out.empty() && out.back() == '/')) {
    out = (fs::path(out) / "emoji64.safetensors").string();
  }
  if (const auto parent = fs::absolute(out).parent_path(); !fs::is_directory(parent)) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec)
      throw Error(parent.string() + ": cannot create the output folder (" + ec.message() + ")");
  }

  std::vector<std::string> dirs = from;
  if (dirs.empty()) {
    const auto sets = split_list(a.str("sets"));
    if (sets.empty()) throw Error("--sets names no set (known: google, twitter)");
    for (const auto& s : sets) imaging::emoji_source(s);  // refuse unknown sets before fetching
    const fs::path cache =
        a.given("cache") ? fs::path(a.str("cache")) : fs::path(default_cache_dir());
    for (const auto& s : sets) dirs.push_back(fetch_package(s, cache));
  }

  imaging::EmojiBuildOptions opts;
  opts.val_fraction = val_fraction;
  opts.seed = seed;
  opts.log = [](const std::string& line) { std::cout << line << "\n" << std::flush; };
  TerminalProgress bar("building the dataset", a.flag_set("quiet"));
  opts.progress = [&bar](const std::string& set, int64_t done, int64_t total) {
    bar.update("reading the " + set + " set", double(done) / double(std::max<int64_t>(total, 1)));
  };
  const io::Dataset d = imaging::build_emoji_dataset(dirs, opts);
  d.save(out);
  print_summary(d, out);
  if (a.given("preview")) write_preview(d, a.str("preview"), seed);
  return 0;
#endif
}

// `adtree data codes`: the pictures' VQ codes instead of the pictures (the emoji set: 16 x 16
// two-byte codes per picture, 3.9 MB, against 93 MB of pixels), for trainers on a machine the
// pictures cannot travel to.
int data_codes(int argc, char** argv) {
  Args a("data codes",
         "Encode every picture of a dataset with a VQ and write a codes dataset: the codes, "
         "captions, emoji ids, styles, split and sources, no pictures. 'adtree train gpt' and "
         "'adtree train drafter' read it like the picture dataset (with the same --vq).");
  a.option("data", "FILE", "the picture dataset ('adtree data emoji')")
      .option("vq", "DIR", "a finished 'adtree train vq' run or a model directory")
      .option("out", "FILE", "the codes dataset to write");
  if (!a.parse(argc, argv)) return 0;
  for (const char* k : {"data", "vq", "out"})
    if (!a.given(k)) throw Error(std::string("give --") + k);
  const auto data = io::Dataset::load(a.str("data"));
  const auto vq = train::load_vq(a.str("vq"));
  const auto codes = train::encode_dataset(data, vq, std::cout);
  codes.save(a.str("out"));
  std::cout << "wrote " << a.str("out") << ": " << codes.size() << " pictures as "
            << codes.codes.size(1) << "x" << codes.codes.size(2) << " codes, "
            << fs::file_size(a.str("out")) / 1024 << " KiB\n";
  return 0;
}

}  // namespace

int cmd_data(int argc, char** argv) {
  if (argc < 1) {
    print_data_usage();
    return 2;
  }
  const std::string sub = argv[0];
  if (sub == "-h" || sub == "--help") {
    print_data_usage();
    return 0;
  }
  if (sub == "codes") return data_codes(argc - 1, argv + 1);
  if (sub != "emoji") throw Error("unknown dataset '" + sub + "' (known: emoji, codes)");
  return data_emoji(argc - 1, argv + 1);
}

}  // namespace adtree::cli
