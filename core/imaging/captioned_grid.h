// A contact sheet with a caption written under every picture: the sample grids in docs/ and the
// model card, where a reader must see which prompt made which picture.
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace adtree::imaging {

// images: uint8 [N, H, W, 3]; captions: N strings (wrapped to the cell width, at most
// `caption_lines` lines, the last one ending in "..." when cut). Each picture is enlarged by the
// integer `scale` (nearest neighbour). Returns uint8 RGB [rows * cell_h, cols * cell_w, 3] on
// white.
at::Tensor captioned_grid(const at::Tensor& images, const std::vector<std::string>& captions,
                          int64_t cols, int64_t scale = 2, int64_t caption_lines = 3);

// The caption split into lines no wider than `max_px` at the grid's font (exposed for tests).
std::vector<std::string> wrap_caption(const std::string& text, int max_px, int64_t max_lines);

}  // namespace adtree::imaging
