// Text in PNG files: a tEXt chunk (ASCII text; an uncompressed iTXt chunk for other UTF-8) holding
// one keyword's text, placed right after IHDR so that readers find it before the image data.
// Common tools show it (`identify -verbose`, `exiftool`, PIL's Image.text). `adtree generate`
// keeps its generation settings under the keyword "adtree-settings" (README, "Using the CLI").
#pragma once
#include <optional>
#include <string>

namespace adtree::imaging {

constexpr const char* kSettingsKeyword = "adtree-settings";

// `png` with a text chunk `keyword` = `text` inserted after IHDR (an earlier chunk with the same
// keyword is replaced). Throws adtree::Error if `png` is not a PNG.
std::string png_with_text(const std::string& png, const std::string& keyword,
                          const std::string& text);

// The text of the first tEXt or uncompressed iTXt chunk named `keyword`; nullopt if there is none.
// Throws adtree::Error for a file that is not a PNG or whose chunks are cut short.
std::optional<std::string> png_text(const std::string& png, const std::string& keyword);

}  // namespace adtree::imaging
