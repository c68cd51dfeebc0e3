// Settings inside PNG files (core/imaging/png_text.h): a text chunk after IHDR, read back by the
// project and by common tools (the CLI end-to-end test reads it with ImageMagick when present).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "imaging/image_io.h"
#include "imaging/png_text.h"
#include "util/error.h"

using namespace adtree;

namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
std::string small_png() {
  const auto path = (std::filesystem::temp_directory_path() / "adtree-png-text.png").string();
  imaging::write_image(path, at::full({4, 5, 3}, 200, at::kByte));
  return read_all(path);
}
}  // namespace

TEST(PngText, WrittenAfterIhdrAndReadBack) {
  const auto png = small_png();
  EXPECT_FALSE(imaging::png_text(png, imaging::kSettingsKeyword).has_value());
  const auto with = imaging::png_with_text(png, imaging::kSettingsKeyword, R"({"seed": 3})");
  ASSERT_TRUE(imaging::png_text(with, imaging::kSettingsKeyword).has_value());
  EXPECT_EQ(*imaging::png_text(with, imaging::kSettingsKeyword), R"({"seed": 3})");
  EXPECT_EQ(with.substr(37, 4), "tEXt");  // signature 8 + IHDR 25, then the chunk's length
  EXPECT_FALSE(imaging::png_text(with, "other-key").has_value());
  // Writing again replaces the chunk instead of adding a second one.
  const auto twice = imaging::png_with_text(with, imaging::kSettingsKeyword, R"({"seed": 4})");
  EXPECT_EQ(*imaging::png_text(twice, imaging::kSettingsKeyword), R"({"seed": 4})");
  EXPECT_EQ(twice.size(), with.size());
  // Non-ASCII text goes into an iTXt chunk (UTF-8).
  const auto utf8 = imaging::png_with_text(png, "k", "caf\xc3\xa9");
  EXPECT_EQ(utf8.substr(37, 4), "iTXt");
  EXPECT_EQ(*imaging::png_text(utf8, "k"), "caf\xc3\xa9");
}

TEST(PngText, WriteImageEmbedsSettingsInPngOnly) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto png = (dir / "adtree-png-settings.png").string();
  imaging::write_image(png, at::full({2, 2, 3}, 9, at::kByte), R"({"a": 1})");
  EXPECT_EQ(*imaging::png_text(read_all(png), imaging::kSettingsKeyword), R"({"a": 1})");
  EXPECT_EQ(imaging::read_image(png).size(0), 2);  // still an ordinary image
  const auto jpg = (dir / "adtree-png-settings.jpg").string();
  imaging::write_image(jpg, at::full({2, 2, 3}, 9, at::kByte), R"({"a": 1})");
  EXPECT_EQ(imaging::read_image(jpg).size(0), 2);
}

TEST(PngText, BadFilesAreClearErrors) {
  EXPECT_THROW(imaging::png_text("GIF89a....", "k"), Error);
  const auto png = small_png();
  try {
    imaging::png_text(png.substr(0, 20), "k");
    ADD_FAILURE() << "a truncated PNG was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut short"), std::string::npos) << e.what();
  }
  EXPECT_THROW(imaging::png_with_text("not a png", "k", "v"), Error);
}
