#include "imaging/captioned_grid.h"

#include <opencv2/imgproc.hpp>

#include <sstream>

#include "util/error.h"

namespace adtree::imaging {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kFontScale = 0.36;
constexpr int kThickness = 1;
constexpr int kLineGap = 3;
constexpr int kPad = 6;

int text_width(const std::string& s) {
  int base = 0;
  return cv::getTextSize(s, kFont, kFontScale, kThickness, &base).width;
}

int line_height() {
  int base = 0;
  return cv::getTextSize("Ag", kFont, kFontScale, kThickness, &base).height + base + kLineGap;
}

}  // namespace

std::vector<std::string> wrap_caption(const std::string& text, int max_px, int64_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  std::string word, line;
  bool cut = false;
  while (words >> word) {
    const std::string candidate = line.empty() ? word : line + " " + word;
    if (line.empty() || text_width(candidate) <= max_px) {
      line = candidate;
      continue;
    }
    if (int64_t(lines.size()) + 1 == max_lines) {
      cut = true;
      break;
    }
    lines.push_back(line);
    line = word;
  }
  if (!line.empty()) lines.push_back(line);
  if (cut && !lines.empty()) {
    // Shorten the last line until the ellipsis fits, so a cut caption is visibly cut.
    auto& last = lines.back();
    while (!last.empty() && text_width(last + "...") > max_px) last.pop_back();
    last += "...";
  }
  return lines;
}

at::Tensor captioned_grid(const at::Tensor& images, const std::vector<std::string>& captions,
                          int64_t cols, int64_t scale, int64_t caption_lines) {
  if (images.dim() != 4 || images.size(3) != 3 || images.scalar_type() != at::kByte) {
    throw Error("captioned_grid: expected uint8 images [N, H, W, 3]");
  }
  const int64_t n = images.size(0);
  if (int64_t(captions.size()) != n)
    throw Error("captioned_grid: one caption per picture is needed");
  if (cols <= 0 || scale <= 0 || caption_lines <= 0) throw Error("captioned_grid: bad layout");
  const int64_t h = images.size(1) * scale, w = images.size(2) * scale;
  const int cell_w = int(std::max<int64_t>(w, 96) + 2 * kPad);
  const int text_h = int(caption_lines) * line_height();
  const int cell_h = int(h) + text_h + 3 * kPad;
  const int64_t rows = (n + cols - 1) / cols;
  cv::Mat sheet(int(rows) * cell_h, int(cols) * cell_w, CV_8UC3, cv::Scalar(255, 255, 255));
  const auto src = images.to(at::kCPU).contiguous();
  for (int64_t i = 0; i < n; ++i) {
    const int x0 = int(i % cols) * cell_w, y0 = int(i / cols) * cell_h;
    cv::Mat pic(int(src.size(1)), int(src.size(2)), CV_8UC3, src[i].data_ptr<uint8_t>());
    cv::Mat big;
    cv::resize(pic, big, cv::Size(int(w), int(h)), 0, 0, cv::INTER_NEAREST);
    const int px = x0 + (cell_w - int(w)) / 2;
    big.copyTo(sheet(cv::Rect(px, y0 + kPad, int(w), int(h))));
    cv::rectangle(sheet, cv::Rect(px - 1, y0 + kPad - 1, int(w) + 2, int(h) + 2),
                  cv::Scalar(200, 200, 200));
    int y = y0 + kPad + int(h) + kPad + line_height() - kLineGap;
    for (const auto& line : wrap_caption(captions[size_t(i)], cell_w - 2 * kPad, caption_lines)) {
      const int tx = x0 + (cell_w - text_width(line)) / 2;
      // The sheet is RGB like the pictures; dark grey text reads well on white.
      cv::putText(sheet, line, cv::Point(tx, y), kFont, kFontScale, cv::Scalar(40, 40, 40),
                  kThickness, cv::LINE_AA);
      y += line_height();
    }
  }
  return at::from_blob(sheet.data, {sheet.rows, sheet.cols, 3}, at::kByte).clone();
}

}  // namespace adtree::imaging
