// Image files and pixel helpers (OpenCV lives here and in the UI only).
#pragma once
#include <ATen/ATen.h>

#include <string>

namespace adtree::imaging {

// Writes uint8 RGB [H, W, 3] (CPU or not) as PNG/JPEG by extension; throws adtree::Error on
// failure.
// `settings` (optional): JSON of how the image was made, kept in a PNG text chunk
// (png_text.h, keyword "adtree-settings"); ignored for other formats.
void write_image(const std::string& path, const at::Tensor& rgb, const std::string& settings = {});
// Reads any OpenCV-readable image as uint8 RGB [H, W, 3]; alpha is composited onto white.
at::Tensor read_image(const std::string& path);
// Nearest-neighbour upscaling by an integer factor (crisp pixels for small images).
at::Tensor upscale_nearest(const at::Tensor& rgb, int factor);

}  // namespace adtree::imaging
