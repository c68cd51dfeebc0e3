// Token colours (ModelInfo::token_colors): the approximate colour of every code of a model's
// tokenizer, so a front end paints each token the moment it is committed, before the next preview.
// Small codebooks are decoded at load; a large one (LlamaGen's VQ-16: 16,384 codes, a wide decoder,
// about 50 s on two cores) is decoded in the background, a small grid at a time while the engine
// has nothing else to do, and cached per model hash so that this happens once per model.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/model_dir.h"

namespace adtree::engine {

// Colours of codes [start, start + side * side) clipped to the codebook, written into `out`
// (codebook_size x RGB): the codes laid out as a side x side grid, VQ-decoded, each cell's pixels
// averaged. Neighbouring codes bleed a little into each cell; good enough to paint a token. Returns
// the number of codes coloured.
int64_t colour_grid(const model::ModelBundle& m, int64_t start, int64_t side,
                    std::vector<uint8_t>& out);

// The whole palette at load, in grids of PaletteBuild::kSide x kSide codes (the layout changes the
// colours a little: the decoder's norms and attention see the whole grid, so both paths use one).
// Empty when the codes left, at the last grid's cost per code, would take longer than `budget_ms`
// (10x that after the first grid, which overstates the cost). *ms_per_cell: the decoder's cost per
// token cell measured on the way, which the previews plan with before their first decode.
std::vector<uint8_t> token_palette(const model::ModelBundle& m, double budget_ms,
                                   double* ms_per_cell);

// Where a model's palette is cached: <cache_root>/adtree-studio/palettes/<hex>.rgb for a hash
// "sha256:<hex>". cache_root empty: util::user_cache_dir(). Empty path when the model has
// no hash (a build without libcrypto) or there is no cache folder: nothing is cached then.
std::filesystem::path palette_cache_path(const std::string& model_hash,
                                         const std::string& cache_root = "");

// The cached palette, or empty when the file is missing, unreadable or not codebook_size x 3 bytes
// (a stale or damaged cache is ignored and rewritten).
std::vector<uint8_t> read_cached_palette(const std::filesystem::path& file, int64_t codebook_size);

// Writes the palette through a temporary file and a rename, so a crash or a full disk never leaves
// a partial cache. False (and a line on stderr) when it cannot: the palette is only a convenience.
bool write_cached_palette(const std::filesystem::path& file, const std::vector<uint8_t>& colours);

// The background build of one model's palette: the engine's worker calls step() while its queue is
// empty, so a job waits at most one grid's decode (8 x 8 codes: about a third of a 256-px picture's
// decode for VQ-16).
class PaletteBuild {
 public:
  static constexpr int64_t kSide = 8;
  PaletteBuild(std::shared_ptr<const model::ModelBundle> m, std::string dir,
               std::filesystem::path cache);
  bool done() const { return next_ >= codebook_size_; }
  void step();  // decodes the next grid
  const std::string& dir() const { return dir_; }
  const std::filesystem::path& cache() const { return cache_; }
  const std::vector<uint8_t>& colours() const { return colours_; }

 private:
  std::shared_ptr<const model::ModelBundle> model_;
  std::string dir_;
  std::filesystem::path cache_;
  int64_t codebook_size_ = 0, next_ = 0;
  std::vector<uint8_t> colours_;
};

}  // namespace adtree::engine
