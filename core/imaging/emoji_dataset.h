// The emoji training set: images and names from the npm packages emoji-datasource-<set> (an
// extracted package holds emoji.json and img/<set>/64/<file>.png), captioned and split for
// training.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/dataset.h"

namespace adtree::imaging {

// An image set we may train on, with the licences that travel with its pictures.
struct EmojiSource {
  std::string set;             // img/<set>/ folder and has_img_<set> flag: "google", "twitter"
  std::string style;           // the caption word naming the drawing style: "noto", "twemoji"
  std::string package;         // npm package: "emoji-datasource-google"
  std::string images_license;  // SPDX id of the pictures' licence
  std::string attribution;     // text to reproduce in model cards
};

// Only openly licensed sets are known; others (apple, facebook) throw adtree::Error.
const EmojiSource& emoji_source(const std::string& set);
// The emoji-datasource metadata itself (names, code points), MIT.
std::string emoji_datasource_attribution();

// Lower-case ASCII words: accented Latin letters lose their accents, '.' and apostrophes join
// ("U.S." -> "us"), every other character separates ("flag-pm" -> "flag pm").
std::vector<std::string> caption_words(const std::string& text);

// The caption of one picture: the name's words, then short-name words the name lacks, then the skin
// tone ("medium skin tone", or "light and dark skin tones" for two people), then the style word.
// Repeated words inside a name are kept: "family man man boy" and "family man boy" differ.
// skin_key: "" or the skin_variations key ("1F3FB", "1F3FB-1F3FF").
std::string emoji_caption(const std::string& name, const std::vector<std::string>& short_names,
                          const std::string& skin_key, const std::string& style);

struct EmojiBuildOptions {
  double val_fraction = 0.05;  // share of emoji (not images) held out, in [0, 1)
  uint64_t seed = 0;           // the split is a function of the seed and the emoji codes only
  int64_t image_size = 64;     // images of another size are resized (area interpolation)
  std::function<void(const std::string&)> log;  // progress lines; may be empty
  // The entries of the package being read: (package set, done, of); may be empty.
  std::function<void(const std::string& set, int64_t done, int64_t total)> progress;
};

// The folder holding emoji.json: `dir` itself or its package/ folder (how npm tarballs unpack).
std::string find_emoji_package_root(const std::string& dir);

// Builds the dataset from extracted packages, one per set. Entries without a picture in the set,
// missing or unreadable PNGs and malformed entries are skipped and counted by reason in
// info["skipped"], never fatal; a package that is not an emoji-datasource package is.
io::Dataset build_emoji_dataset(const std::vector<std::string>& package_dirs,
                                const EmojiBuildOptions& opts = {});

// A contact sheet: images [N, H, W, 3] uint8 in rows of `cols`, each scaled up `scale` times,
// on mid grey so white backgrounds stay visible.
at::Tensor image_grid(const at::Tensor& images, int64_t cols, int64_t scale = 1, int64_t gap = 2);

}  // namespace adtree::imaging
