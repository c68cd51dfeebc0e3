#include "imaging/image_io.h"

#include <cctype>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "imaging/png_text.h"
#include "io/file_write.h"
#include "util/error.h"

namespace adtree::imaging {

namespace {
at::Tensor check_rgb(const at::Tensor& rgb) {
  if (rgb.dim() != 3 || rgb.size(2) != 3 || rgb.scalar_type() != at::kByte) {
    throw Error("expected a uint8 RGB image [H, W, 3]");
  }
  return rgb.to(at::kCPU).contiguous();
}
}  // namespace

void write_image(const std::string& path, const at::Tensor& rgb_in, const std::string& settings) {
  auto rgb = check_rgb(rgb_in);
  cv::Mat view(int(rgb.size(0)), int(rgb.size(1)), CV_8UC3, rgb.data_ptr<uint8_t>());
  cv::Mat bgr;
  cv::cvtColor(view, bgr, cv::COLOR_RGB2BGR);
  // Encoded in memory, then written with checked writes: cv::imwrite does not notice a full disk.
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    throw Error(path + ": cannot write the image: give the file an extension (.png, .jpg)");
  }
  std::vector<uchar> bytes;
  bool ok = false;
  try {
    ok = cv::imencode(path.substr(dot), bgr, bytes);
  } catch (const cv::Exception&) {
    throw Error(path + ": cannot write the image: unsupported format '" + path.substr(dot) + "'");
  }
  if (!ok) throw Error(path + ": cannot encode the image as '" + path.substr(dot) + "'");
  std::string file(bytes.begin(), bytes.end());
  std::string ext = path.substr(dot);
  for (auto& ch : ext) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (!settings.empty() && ext == ".png") file = png_with_text(file, kSettingsKeyword, settings);
  io::write_file(path, file, "the image");
}

at::Tensor read_image(const std::string& path) {
  cv::Mat img = cv::imread(path, cv::IMREAD_UNCHANGED);
  if (img.empty()) throw Error(path + ": cannot read the image (missing or not an image)");
  if (img.depth() != CV_8U) img.convertTo(img, CV_8U, img.depth() == CV_16U ? 1.0 / 257 : 1.0);
  cv::Mat rgb;
  if (img.channels() == 4) {
    // Composite on white: out = a * c + (1 - a) * 255.
    cv::Mat f;
    img.convertTo(f, CV_32FC4, 1.0 / 255);
    std::vector<cv::Mat> ch;
    cv::split(f, ch);
    for (int i = 0; i < 3; ++i) ch[size_t(i)] = ch[size_t(i)].mul(ch[3]) + (1.0 - ch[3]);
    cv::Mat bgr;
    cv::merge(std::vector<cv::Mat>{ch[0], ch[1], ch[2]}, bgr);
    bgr.convertTo(bgr, CV_8UC3, 255.0);
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  } else if (img.channels() == 1) {
    cv::cvtColor(img, rgb, cv::COLOR_GRAY2RGB);
  } else {
    cv::cvtColor(img, rgb, cv::COLOR_BGR2RGB);
  }
  auto t = at::empty({rgb.rows, rgb.cols, 3}, at::kByte);
  for (int r = 0; r < rgb.rows; ++r) {
    std::memcpy(t.data_ptr<uint8_t>() + size_t(r) * size_t(rgb.cols) * 3, rgb.ptr(r),
                size_t(rgb.cols) * 3);
  }
  return t;
}

at::Tensor upscale_nearest(const at::Tensor& rgb_in, int factor) {
  auto rgb = check_rgb(rgb_in);
  if (factor <= 1) return rgb;
  return rgb.repeat_interleave(factor, 0).repeat_interleave(factor, 1).contiguous();
}

}  // namespace adtree::imaging
