// The dataset file and the emoji builder, on a small hand-made package pair (no network): captions,
// alpha on white, skips by reason, the split by emoji, file round trips and rejections, and the
// `adtree data` verb driven as a process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <vector>

#include "error_of.h"
#include "imaging/captioned_grid.h"
#include "imaging/emoji_dataset.h"
#include "io/dataset.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace fs = std::filesystem;
using adtree::Error;
using adtree::io::Dataset;
using adtree::io::Split;
using nlohmann::json;
namespace im = adtree::imaging;

using adtree::testing::error_of;

namespace {

// How the fixture provides an entry's picture.
enum class Pic { Ok, NotInSet, Missing, Corrupt, Big };

struct Spec {
  std::string name, unified;
  std::vector<std::string> short_names;
  Pic pic = Pic::Ok;
  std::vector<std::string> skins;
};

// Covers every caption rule and every skip reason; E000x entries give the split enough emoji.
std::vector<Spec> fixture_specs() {
  std::vector<Spec> s = {
      {"GRINNING FACE", "1F600", {"grinning"}, Pic::Ok, {}},
      {"FATHER CHRISTMAS", "1F385", {"santa"}, Pic::Ok, {"1F3FB", "1F3FF"}},
      {"HANDSHAKE", "1F91D", {"handshake"}, Pic::Ok, {"1F3FB-1F3FF", "1F3FF-1F3FF"}},
      {"THUMBS UP SIGN",
       "1F44D",
       {"+1", "thumbsup"},
       Pic::Ok,
       {"1F3FB", "1F3FC", "1F3FD", "1F3FE", "1F3FF"}},
      {"Côte d’Ivoire Flag", "1F1E8-1F1EE", {"flag-ci"}, Pic::Ok, {}},
      {"NO PICTURE", "1F601", {"no_picture"}, Pic::NotInSet, {}},
      {"MISSING FILE", "1F602", {"missing"}, Pic::Missing, {}},
      {"BROKEN IMAGE", "1F603", {"broken"}, Pic::Corrupt, {}},
      {"BIG IMAGE", "1F604", {"big"}, Pic::Big, {}},
  };
  for (int i = 0; i < 12; ++i) {
    s.push_back({"TEST SHAPE " + std::to_string(i),
                 "E00" + std::to_string(10 + i),
                 {"shape_" + std::to_string(i)},
                 Pic::Ok,
                 {}});
  }
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

// 64x64 BGRA, opaque in a colour of its own, with three marked pixels in the top row:
// (0,0) fully transparent black, (1,0) opaque red, (2,0) half-transparent blue.
void write_rgba_png(const fs::path& p, int index) {
  cv::Mat m(64, 64, CV_8UC4, cv::Scalar(40 + index * 7 % 200, 90, 200 - index * 5 % 150, 255));
  m.at<cv::Vec4b>(0, 0) = cv::Vec4b(0, 0, 0, 0);
  m.at<cv::Vec4b>(0, 1) = cv::Vec4b(0, 0, 255, 255);
  m.at<cv::Vec4b>(0, 2) = cv::Vec4b(255, 0, 0, 128);
  ASSERT_TRUE(cv::imwrite(p.string(), m));
}

// One extracted npm package for `set`, laid out as the real ones: package/{package.json,
// emoji.json, img/<set>/64/*.png}. Returns the folder to pass as --from.
fs::path write_package(const fs::path& root, const std::string& set) {
  const fs::path pkg = root / "package";
  const fs::path img = pkg / "img" / set / "64";
  fs::create_directories(img);
  write_text(
      pkg / "package.json",
      json{{"name", "emoji-datasource-" + set}, {"version", "0.0.1-test"}, {"license", "MIT"}}
          .dump());
  json entries = json::array();
  int n = 0;
  const std::string flag = "has_img_" + set;
  for (const auto& s : fixture_specs()) {
    const std::string file = lower(s.unified) + ".png";
    json e = {{"name", s.name},
              {"unified", s.unified},
              {"image", file},
              {"short_names", s.short_names},
              {flag, s.pic != Pic::NotInSet}};
    switch (s.pic) {
      case Pic::Ok:
        write_rgba_png(img / file, n++);
        break;
      case Pic::Corrupt:
        write_text(img / file, "this is not a PNG file at all");
        break;
      case Pic::Big:
        EXPECT_TRUE(
            cv::imwrite((img / file).string(), cv::Mat(128, 128, CV_8UC3, cv::Scalar(10, 20, 30))));
        break;
      case Pic::NotInSet:
      case Pic::Missing:
        break;
    }
    for (const auto& k : s.skins) {
      const std::string u = s.unified + "-" + k;
      e["skin_variations"][k] = {{"unified", u}, {"image", lower(u) + ".png"}, {flag, true}};
      write_rgba_png(img / (lower(u) + ".png"), n++);
    }
    entries.push_back(e);
  }
  entries.push_back({{"name", "NO CODE"}, {"image", "x.png"}});  // malformed: no unified code
  write_text(pkg / "emoji.json", entries.dump(1));
  return root;
}

// Images per set: every picture of an Ok spec (base + skins) and the Big one.
int64_t expected_images() {
  int64_t n = 0;
  for (const auto& s : fixture_specs()) {
    if (s.pic == Pic::Ok || s.pic == Pic::Big) ++n;
    n += int64_t(s.skins.size());
  }
  return n;
}

class DatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("adtree_test_dataset_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    google_ = write_package(dir_ / "google", "google");
    twitter_ = write_package(dir_ / "twitter", "twitter");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static Dataset build(double val_fraction = 0.5, uint64_t seed = 1) {
    im::EmojiBuildOptions o;
    o.val_fraction = val_fraction;
    o.seed = seed;
    return im::build_emoji_dataset({google_.string(), twitter_.string()}, o);
  }
  static int64_t row_of(const Dataset& d, const std::string& caption) {
    for (int64_t i = 0; i < d.size(); ++i) {
      if (d.captions[size_t(i)] == caption) return i;
    }
    ADD_FAILURE() << "no image with caption '" << caption << "'";
    return 0;
  }

  static fs::path dir_, google_, twitter_;
};
fs::path DatasetTest::dir_, DatasetTest::google_, DatasetTest::twitter_;

}  // namespace

TEST(CaptionWords, LowerCaseAsciiWordsKeepingDigits) {
  using V = std::vector<std::string>;
  EXPECT_EQ(im::caption_words("Côte d’Ivoire Flag"), (V{"cote", "divoire", "flag"}));
  EXPECT_EQ(im::caption_words("U.S. Virgin Islands"), (V{"us", "virgin", "islands"}));
  EXPECT_EQ(im::caption_words("flag-pm"), (V{"flag", "pm"}));
  EXPECT_EQ(im::caption_words("man_woman:boy"), (V{"man", "woman", "boy"}));
  EXPECT_EQ(im::caption_words("KEYCAP: 0"), (V{"keycap", "0"}));
  EXPECT_EQ(im::caption_words("+1"), (V{"1"}));
  EXPECT_EQ(im::caption_words("Åland Türkiye Curaçao"), (V{"aland", "turkiye", "curacao"}));
  EXPECT_TRUE(im::caption_words("\xff\xfe ~ &").empty());
}

TEST(EmojiCaption, NameShortNamesSkinToneAndStyle) {
  EXPECT_EQ(im::emoji_caption("FATHER CHRISTMAS", {"santa"}, "", "noto"),
            "father christmas santa noto");
  EXPECT_EQ(im::emoji_caption("FATHER CHRISTMAS", {"santa"}, "1F3FB", "twemoji"),
            "father christmas santa light skin tone twemoji");
  EXPECT_EQ(im::emoji_caption("HANDSHAKE", {"handshake"}, "1F3FC-1F3FF", "noto"),
            "handshake medium light and dark skin tones noto");
  EXPECT_EQ(im::emoji_caption("HANDSHAKE", {"handshake"}, "1F3FF-1F3FF", "noto"),
            "handshake dark skin tone noto");
  // Short names add only what the name lacks; repeated words of the name itself carry meaning.
  EXPECT_EQ(im::emoji_caption("SMILING FACE", {"smiling_face", "smile"}, "", "noto"),
            "smiling face smile noto");
  EXPECT_EQ(im::emoji_caption("FAMILY: MAN, MAN, BOY", {"man-man-boy"}, "", "noto"),
            "family man man boy noto");
  EXPECT_NE(im::emoji_caption("FAMILY: MAN, BOY, BOY", {}, "", "noto"),
            im::emoji_caption("FAMILY: MAN, BOY", {}, "", "noto"));
  EXPECT_THROW(im::emoji_caption("X", {}, "1F600", "noto"), Error);
}

TEST(EmojiSource, OnlyOpenlyLicensedSets) {
  EXPECT_EQ(im::emoji_source("google").style, "noto");
  EXPECT_EQ(im::emoji_source("google").images_license, "Apache-2.0");
  EXPECT_EQ(im::emoji_source("twitter").style, "twemoji");
  EXPECT_EQ(im::emoji_source("twitter").images_license, "CC-BY-4.0");
  EXPECT_NE(error_of([] { im::emoji_source("apple"); }).find("not supported"), std::string::npos);
}

TEST_F(DatasetTest, CountsCaptionsAndSkipsByReason) {
  const Dataset d = build();
  ASSERT_EQ(d.size(), 2 * expected_images());
  EXPECT_EQ(d.images.sizes().vec(), (std::vector<int64_t>{d.size(), 64, 64, 3}));
  EXPECT_EQ(d.images.scalar_type(), at::kByte);

  const json& skipped = d.info["skipped"];
  EXPECT_EQ(skipped["not_in_set"], 2);  // one per set
  EXPECT_EQ(skipped["missing_png"], 2);
  EXPECT_EQ(skipped["unreadable_png"], 2);
  EXPECT_EQ(skipped["bad_entry"], 2);
  EXPECT_EQ(d.info["counts"]["skipped"], 8);
  EXPECT_EQ(d.info["counts"]["resized"], 2);
  EXPECT_EQ(d.info["sources"][0]["skipped"]["missing_png"], 1);
  EXPECT_EQ(d.info["skipped_examples"]["missing_png"][0], "google: 1f602.png");

  // One caption, one picture: every caption is distinct and ends in its image's style word.
  EXPECT_EQ(std::set<std::string>(d.captions.begin(), d.captions.end()).size(), size_t(d.size()));
  EXPECT_EQ(d.info["counts"]["captions"], d.size());
  EXPECT_TRUE(d.info["duplicate_captions"].empty());
  for (int64_t i = 0; i < d.size(); ++i) {
    const auto& c = d.captions[size_t(i)];
    const auto& s = d.style[size_t(i)];
    EXPECT_EQ(c.substr(c.size() - s.size() - 1), " " + s) << c;
  }
  row_of(d, "grinning face noto");
  row_of(d, "grinning face twemoji");
  row_of(d, "father christmas santa dark skin tone noto");
  row_of(d, "handshake light and dark skin tones twemoji");
  row_of(d, "thumbs up sign 1 thumbsup medium dark skin tone noto");
  row_of(d, "cote divoire flag ci noto");
  row_of(d, "big image noto");
  for (const auto& c : d.captions) {
    EXPECT_EQ(c.find("broken"), std::string::npos);
    EXPECT_EQ(c.find("missing"), std::string::npos);
    EXPECT_EQ(c.find("picture"), std::string::npos);
  }

  // Licences and versions travel with the data.
  ASSERT_EQ(d.info["sources"].size(), 2u);
  EXPECT_EQ(d.info["sources"][0]["package"], "emoji-datasource-google");
  EXPECT_EQ(d.info["sources"][0]["version"], "0.0.1-test");
  EXPECT_EQ(d.info["sources"][1]["images_license"], "CC-BY-4.0");
  EXPECT_NE(d.info["sources"][1]["attribution"].get<std::string>().find("Twemoji"),
            std::string::npos);
  EXPECT_EQ(d.info["metadata_license"], "MIT");
}

TEST_F(DatasetTest, AlphaIsCompositedOnWhiteInRgbOrder) {
  const Dataset d = build();
  const auto img = d.images[row_of(d, "grinning face noto")];
  const auto px = [&](int64_t x) {
    auto p = img[0][x];
    return std::vector<int>{p[0].item<int>(), p[1].item<int>(), p[2].item<int>()};
  };
  EXPECT_EQ(px(0), (std::vector<int>{255, 255, 255}));  // transparent black becomes white
  EXPECT_EQ(px(1), (std::vector<int>{255, 0, 0}));      // opaque red stays red (not BGR)
  const auto half = px(2);                              // half-transparent blue over white
  EXPECT_NEAR(half[0], 127, 2);
  EXPECT_NEAR(half[1], 127, 2);
  EXPECT_EQ(half[2], 255);
  // The oversized RGB picture was resized with its colour intact (BGR 10,20,30 = RGB 30,20,10).
  const auto big = d.images[row_of(d, "big image noto")];
  EXPECT_EQ(big.sizes().vec(), (std::vector<int64_t>{64, 64, 3}));
  EXPECT_EQ(big[32][32][0].item<int>(), 30);
  EXPECT_EQ(big[32][32][2].item<int>(), 10);
}

TEST_F(DatasetTest, SplitIsByEmojiAcrossSkinTonesAndSets) {
  const Dataset d = build(0.5, 7);
  std::map<int64_t, std::set<uint8_t>> sides;
  std::map<std::string, std::set<int64_t>> ids_of_emoji;
  for (int64_t i = 0; i < d.size(); ++i) {
    sides[d.emoji[size_t(i)]].insert(d.split[size_t(i)]);
  }
  for (const auto& [id, s] : sides) EXPECT_EQ(s.size(), 1u) << "emoji " << id << " straddles";
  // Skin variants and both styles of one emoji share its id.
  std::set<int64_t> santa;
  for (int64_t i = 0; i < d.size(); ++i) {
    if (d.captions[size_t(i)].rfind("father christmas", 0) == 0) santa.insert(d.emoji[size_t(i)]);
  }
  EXPECT_EQ(santa.size(), 1u);
  const auto codes = d.info["emoji_codes"];
  EXPECT_EQ(codes[size_t(*santa.begin())], "1F385");
  EXPECT_EQ(int64_t(sides.size()), d.info["counts"]["emoji"].get<int64_t>());
  EXPECT_GT(d.count(Split::Train), 0);
  EXPECT_GT(d.count(Split::Validation), 0);
  EXPECT_EQ(d.count(Split::Train) + d.count(Split::Validation), d.size());
  // Half of the 18 usable emoji.
  EXPECT_EQ(d.info["counts"]["validation_emoji"], 9);
}

TEST_F(DatasetTest, SplitIsDeterministicForASeed) {
  const Dataset a = build(0.3, 42), b = build(0.3, 42);
  EXPECT_EQ(a.split, b.split);
  EXPECT_EQ(a.captions, b.captions);
  EXPECT_TRUE(a.images.equal(b.images));
  bool differs = false;
  for (uint64_t seed = 0; seed < 5 && !differs; ++seed) differs = build(0.3, seed).split != a.split;
  EXPECT_TRUE(differs) << "the seed does not change the split";

  const Dataset none = build(0.0, 1);
  EXPECT_EQ(none.count(Split::Validation), 0);
  // A small non-zero fraction still holds one emoji out.
  EXPECT_EQ(build(0.001, 1).info["counts"]["validation_emoji"], 1);
  EXPECT_NE(error_of([] { build(1.0, 1); }).find("validation fraction"), std::string::npos);
}

TEST_F(DatasetTest, SaveLoadRoundTripAndSubsets) {
  const Dataset d = build(0.4, 3);
  const std::string path = (dir_ / "round.safetensors").string();
  d.save(path);
  const Dataset e = Dataset::load(path);
  EXPECT_TRUE(e.images.equal(d.images));
  EXPECT_EQ(e.captions, d.captions);
  EXPECT_EQ(e.style, d.style);
  EXPECT_EQ(e.emoji, d.emoji);
  EXPECT_EQ(e.split, d.split);
  EXPECT_EQ(e.info, d.info);

  // Plain safetensors readers see the documented layout.
  adtree::io::SafetensorsReader r(path);
  EXPECT_EQ(r.metadata().at("format"), "adtree-dataset");
  EXPECT_EQ(r.find("images")->dtype, adtree::io::DType::U8);
  EXPECT_EQ(r.find("emoji")->dtype, adtree::io::DType::I64);
  EXPECT_EQ(r.find("split")->dtype, adtree::io::DType::U8);
  EXPECT_EQ(json::parse(r.metadata().at("captions")).size(), size_t(d.size()));

  const Dataset train = e.subset(Split::Train), val = e.subset(Split::Validation);
  EXPECT_EQ(train.size(), d.count(Split::Train));
  EXPECT_EQ(val.size(), d.count(Split::Validation));
  for (auto s : val.split) EXPECT_EQ(s, uint8_t(Split::Validation));
  const auto rows = d.indices(Split::Validation);
  ASSERT_FALSE(rows.empty());
  EXPECT_TRUE(val.images[0].equal(d.images[rows[0]]));
  EXPECT_EQ(val.captions[0], d.captions[size_t(rows[0])]);

  // An empty subset still saves and loads.
  const std::string empty_path = (dir_ / "empty.safetensors").string();
  build(0.0, 1).subset(Split::Validation).save(empty_path);
  EXPECT_EQ(Dataset::load(empty_path).size(), 0);
}

// A codes dataset keeps codes instead of pictures: it round-trips, subsets keep the codes, and a
// set with both, neither, other dtypes, negative codes or no VQ fingerprint is refused.
TEST_F(DatasetTest, CodesDatasetRoundTripsAndIsChecked) {
  Dataset d = build(0.4, 3);
  const int64_t n = d.size();
  d.images = at::Tensor();
  d.codes = at::arange(n * 16, at::TensorOptions().dtype(at::kShort)).view({n, 4, 4});
  d.codes_vq = "12:3.5:7.25";
  const std::string path = (dir_ / "codes.safetensors").string();
  d.save(path);
  const Dataset e = Dataset::load(path);
  EXPECT_FALSE(e.has_images());
  EXPECT_TRUE(e.codes.equal(d.codes));
  EXPECT_EQ(e.codes_vq, d.codes_vq);
  EXPECT_EQ(e.captions, d.captions);
  adtree::io::SafetensorsReader r(path);
  EXPECT_EQ(r.find("images"), nullptr);
  EXPECT_EQ(r.find("codes")->dtype, adtree::io::DType::I16);
  const auto rows = d.indices(Split::Validation);
  ASSERT_FALSE(rows.empty());
  EXPECT_TRUE(e.subset(Split::Validation).codes[0].equal(d.codes[rows[0]]));
  const auto why = [](const Dataset& x) {
    try {
      x.validate("x");
      return std::string();
    } catch (const adtree::Error& err) {
      return std::string(err.what());
    }
  };
  auto both = d;
  both.images = at::zeros({n, 8, 8, 3}, at::kByte);
  EXPECT_NE(why(both).find("either images or codes"), std::string::npos);
  auto wide = d;
  wide.codes = d.codes.to(at::kInt);
  EXPECT_NE(why(wide).find("codes must be int16"), std::string::npos);
  auto negative = d;
  negative.codes = d.codes.clone();
  negative.codes[0][0][0] = -1;
  EXPECT_NE(why(negative).find("must not be negative"), std::string::npos);
  auto anonymous = d;
  anonymous.codes_vq.clear();
  EXPECT_NE(why(anonymous).find("fingerprint of the VQ"), std::string::npos);
  try {
    e.require_images("the VQ trainer");
    ADD_FAILURE() << "a codes dataset passed for pictures";
  } catch (const adtree::Error& err) {
    EXPECT_NE(std::string(err.what()).find("the VQ trainer needs the pictures"), std::string::npos);
  }
}

TEST_F(DatasetTest, LoadRejectsBadFilesWithClearMessages) {
  const auto p = [&](const std::string& name) { return (dir_ / name).string(); };
  const auto u8 = at::TensorOptions().dtype(at::kByte);
  const auto i64 = at::TensorOptions().dtype(at::kLong);
  const std::map<std::string, std::string> good_meta = {{"format", "adtree-dataset"},
                                                        {"version", "1"},
                                                        {"captions", R"(["a","b","c"])"},
                                                        {"styles", R"(["noto","noto","noto"])"},
                                                        {"info", "{}"}};
  const std::map<std::string, at::Tensor> good = {{"images", at::zeros({3, 4, 4, 3}, u8)},
                                                  {"emoji", at::zeros({3}, i64)},
                                                  {"split", at::zeros({3}, u8)}};
  adtree::io::write_safetensors(p("ok.safetensors"), good, good_meta);
  EXPECT_EQ(Dataset::load(p("ok.safetensors")).size(), 3);

  const auto expect_error = [&](const std::string& file, const std::string& part) {
    const std::string msg = error_of([&] { Dataset::load(p(file)); });
    EXPECT_NE(msg.find(part), std::string::npos) << file << ": " << msg;
    EXPECT_NE(msg.find(file), std::string::npos) << "the message should name the file: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  };
  auto meta = good_meta;
  meta.erase("format");
  adtree::io::write_safetensors(p("plain.safetensors"), good, meta);
  expect_error("plain.safetensors", "not an adtree dataset");

  meta = good_meta;
  meta["captions"] = R"(["a","b"])";
  adtree::io::write_safetensors(p("fewer.safetensors"), good, meta);
  expect_error("fewer.safetensors", "3 images but 2 captions");

  meta = good_meta;
  meta["styles"] = "not json";
  adtree::io::write_safetensors(p("styles.safetensors"), good, meta);
  expect_error("styles.safetensors", "\"styles\" is not valid JSON");

  meta = good_meta;
  meta["version"] = "9";
  adtree::io::write_safetensors(p("version.safetensors"), good, meta);
  expect_error("version.safetensors", "format version 9");

  auto t = good;
  t["emoji"] = at::zeros({3}, at::TensorOptions().dtype(at::kInt));
  adtree::io::write_safetensors(p("dtype.safetensors"), t, good_meta);
  expect_error("dtype.safetensors", "'emoji' has dtype I32, expected I64");

  t = good;
  t["split"] = at::zeros({4}, u8);
  adtree::io::write_safetensors(p("split_len.safetensors"), t, good_meta);
  expect_error("split_len.safetensors", "'split' has 4 entries");

  t = good;
  t["split"] = at::full({3}, 7, u8);
  adtree::io::write_safetensors(p("split_val.safetensors"), t, good_meta);
  expect_error("split_val.safetensors", "split entry 0 is 7");

  t = good;
  t["images"] = at::zeros({3, 4, 4}, u8);
  adtree::io::write_safetensors(p("rank.safetensors"), t, good_meta);
  expect_error("rank.safetensors", "'images' has shape [3, 4, 4]");

  t = good;
  t.erase("split");
  adtree::io::write_safetensors(p("nosplit.safetensors"), t, good_meta);
  expect_error("nosplit.safetensors", "tensor 'split' is missing");

  write_text(dir_ / "garbage.safetensors", "garbage, not a safetensors file");
  expect_error("garbage.safetensors", "garbage.safetensors");
  expect_error("absent.safetensors", "absent.safetensors");

  Dataset bad = build();
  bad.captions.pop_back();
  EXPECT_NE(error_of([&] { bad.save(p("never.safetensors")); }).find("captions"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(p("never.safetensors")));
}

TEST_F(DatasetTest, BadPackagesAreClearErrors) {
  EXPECT_NE(error_of([] {
              im::build_emoji_dataset({(dir_ / "nowhere").string()});
            }).find("no such directory"),
            std::string::npos);
  fs::create_directories(dir_ / "empty");
  EXPECT_NE(error_of([] {
              im::build_emoji_dataset({(dir_ / "empty").string()});
            }).find("not an emoji-datasource package"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              im::build_emoji_dataset({google_.string(), google_.string()});
            }).find("given twice"),
            std::string::npos);

  // A set without an open licence is refused before any image is read.
  const fs::path apple = dir_ / "apple" / "package";
  fs::create_directories(apple);
  write_text(apple / "package.json", R"({"name": "emoji-datasource-apple", "version": "1.0.0"})");
  write_text(apple / "emoji.json", "[]");
  EXPECT_NE(error_of([&] { im::build_emoji_dataset({apple.string()}); }).find("not supported"),
            std::string::npos);

  const fs::path broken = dir_ / "broken" / "package";
  fs::create_directories(broken);
  write_text(broken / "package.json", R"({"name": "emoji-datasource-google"})");
  write_text(broken / "emoji.json", "[{");
  EXPECT_NE(error_of([&] { im::build_emoji_dataset({broken.string()}); }).find("not valid JSON"),
            std::string::npos);
}

TEST(ImageGrid, TilesImagesOnGrey) {
  auto imgs = at::full({5, 2, 3, 3}, 255, at::TensorOptions().dtype(at::kByte));
  const auto g = im::image_grid(imgs, 4, 2, 1);
  EXPECT_EQ(g.sizes().vec(), (std::vector<int64_t>{2 * (4 + 1) + 1, 4 * (6 + 1) + 1, 3}));
  EXPECT_EQ(g[0][0][0].item<int>(), 128);
  EXPECT_EQ(g[1][1][0].item<int>(), 255);  // first tile
  EXPECT_EQ(g[6][1][0].item<int>(), 255);  // fifth image: second row, first column
  EXPECT_EQ(g[6][8][0].item<int>(), 128);  // no sixth image: grey
}

#ifdef ADTREE_CLI
namespace {
// Exit status of the adtree binary with `args`; stdout and stderr go to `log`.
int run_cli(const std::string& args, const fs::path& log) {
  const std::string cmd =
      std::string("'") + ADTREE_CLI + "' " + args + " > '" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}
std::string read_all(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
}  // namespace

TEST(CaptionedGrid, PicturesKeepTheirPixelsAndCaptionsAreWrittenBelow) {
  using adtree::imaging::captioned_grid;
  using adtree::imaging::wrap_caption;
  // Three flat-coloured 8x8 pictures, two columns, scale 2.
  auto imgs = at::zeros({3, 8, 8, 3}, at::kByte);
  imgs[0].select(2, 0).fill_(255);  // red
  imgs[1].select(2, 1).fill_(255);  // green
  imgs[2].select(2, 2).fill_(255);  // blue
  auto sheet = captioned_grid(imgs, {"red", "green apple", "blue"}, 2, 2);
  ASSERT_EQ(sheet.dim(), 3);
  const int64_t cell_w = sheet.size(1) / 2, cell_h = sheet.size(0) / 2;
  // The middle of each picture keeps its colour (nearest-neighbour enlargement, RGB order).
  auto px = [&](int64_t cell, int64_t dy) {
    const int64_t cx = (cell % 2) * cell_w + cell_w / 2, cy = (cell / 2) * cell_h + dy;
    return sheet[cy][cx];
  };
  EXPECT_EQ(px(0, 14)[0].item<int>(), 255);
  EXPECT_EQ(px(0, 14)[1].item<int>(), 0);
  EXPECT_EQ(px(1, 14)[1].item<int>(), 255);
  EXPECT_EQ(px(2, 14)[2].item<int>(), 255);
  // Under each picture there is dark caption text; the empty fourth cell stays white.
  auto below = sheet.narrow(0, 6 + 16 + 4, cell_h - 26).narrow(1, 0, cell_w);
  EXPECT_LT(below.min().item<int>(), 128);
  EXPECT_EQ(sheet.narrow(0, cell_h, cell_h).narrow(1, cell_w, cell_w).min().item<int>(), 255);
  // Long captions wrap, and are cut with an ellipsis beyond the line limit.
  auto lines =
      wrap_caption("woman with headscarf medium dark skin tone twemoji extra words here", 90, 2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines.back().substr(lines.back().size() - 3), "...");
  EXPECT_EQ(wrap_caption("red apple", 500, 3), std::vector<std::string>{"red apple"});
  EXPECT_THROW(captioned_grid(imgs, {"only one"}, 2), adtree::Error);
}

TEST_F(DatasetTest, CliBuildsTheSameDatasetFromExtractedPackages) {
  const fs::path out = dir_ / "cli" / "emoji.safetensors", log = dir_ / "cli.log";
  const fs::path preview = dir_ / "preview.png";
  ASSERT_EQ(run_cli("data emoji --from '" + google_.string() + "' --from='" + twitter_.string() +
                        "' --out '" + out.string() + "' --val-fraction 0.5 --seed 1 --preview '" +
                        preview.string() + "'",
                    log),
            0)
      << read_all(log);
  const std::string text = read_all(log);
  EXPECT_NE(text.find("images      " + std::to_string(2 * expected_images())), std::string::npos)
      << text;
  EXPECT_NE(text.find("missing_png 2"), std::string::npos) << text;
  EXPECT_NE(text.find("wrote " + out.string()), std::string::npos) << text;
  const Dataset cli = Dataset::load(out.string()), lib = build(0.5, 1);
  EXPECT_EQ(cli.captions, lib.captions);
  EXPECT_EQ(cli.split, lib.split);
  EXPECT_TRUE(cli.images.equal(lib.images));
  EXPECT_TRUE(fs::exists(preview));
}

TEST_F(DatasetTest, CliHelpAndErrors) {
  const fs::path log = dir_ / "cli_help.log";
  EXPECT_EQ(run_cli("data --help", log), 0);
  EXPECT_NE(read_all(log).find("emoji"), std::string::npos);
  EXPECT_EQ(run_cli("data emoji --help", log), 0);
  EXPECT_NE(read_all(log).find("--val-fraction"), std::string::npos);
  EXPECT_NE(run_cli("data", log), 0);
  EXPECT_NE(run_cli("data emoji --bogus 1", log), 0);
  EXPECT_NE(read_all(log).find("unknown option '--bogus'"), std::string::npos);
  EXPECT_NE(run_cli("data pictures", log), 0);
  EXPECT_NE(read_all(log).find("unknown dataset 'pictures'"), std::string::npos);
  EXPECT_NE(run_cli("data emoji --from '" + google_.string() + "'", log), 0);
  EXPECT_NE(read_all(log).find("--out FILE"), std::string::npos);
  EXPECT_NE(run_cli("data emoji --from /nonexistent/pkg --out x.safetensors", log), 0);
  EXPECT_NE(read_all(log).find("no such directory"), std::string::npos);
  EXPECT_NE(run_cli("data emoji --sets apple --out x.safetensors", log), 0);
  EXPECT_NE(read_all(log).find("not supported"), std::string::npos);
  EXPECT_NE(run_cli("data emoji --val-fraction 2 --out x.safetensors", log), 0);
  EXPECT_NE(read_all(log).find("--val-fraction"), std::string::npos);
}
#endif
