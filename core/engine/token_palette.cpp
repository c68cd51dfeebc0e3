#include "engine/token_palette.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>

#include "io/checksum.h"
#include "model/llamagen/vq.h"
#include "util/clock.h"
#include "util/resource_paths.h"

namespace adtree::engine {

namespace fs = std::filesystem;

int64_t colour_grid(const model::ModelBundle& m, int64_t start, int64_t side,
                    std::vector<uint8_t>& out) {
  const int64_t v = m.vq_config.codebook_size, f = m.vq_config.downsample_factor();
  const int64_t chunk = side * side, n = std::min(chunk, v - start);
  if (n <= 0) return 0;
  // Codes past the codebook's end (the last grid) repeat code 0; their cells are not read.
  auto idx = at::arange(start, start + chunk, at::TensorOptions().dtype(at::kLong));
  idx = at::where(idx < v, idx, at::zeros_like(idx)).unsqueeze(0);
  auto img =
      model::VqModel::to_bytes(model::decode_picture(m, idx.to(m.gpt->device()), side, side))[0];
  auto mean = img.to(at::kFloat).reshape({side, f, side, f, 3}).mean({1, 3}).reshape({chunk, 3});
  auto bytes = mean.narrow(0, 0, n).round().clamp(0, 255).to(at::kByte).contiguous();
  std::copy(bytes.data_ptr<uint8_t>(), bytes.data_ptr<uint8_t>() + n * 3, out.begin() + start * 3);
  return n;
}

std::vector<uint8_t> token_palette(const model::ModelBundle& m, double budget_ms,
                                   double* ms_per_cell) {
  if (!m.vq) return {};
  const int64_t v = m.vq_config.codebook_size, side = PaletteBuild::kSide;
  std::vector<uint8_t> out(size_t(v * 3));
  for (int64_t start = 0; start < v;) {
    const auto t0 = Clock::now();
    const int64_t n = colour_grid(m, start, side, out);
    const bool first = start == 0;
    start += n;
    *ms_per_cell = ms_since(t0) / double(side * side);
    // The first grid overstates the cost per code (first-call warm-up): it gives up only when far
    // over budget; the next grid decides exactly.
    const double left_ms = ms_since(t0) / double(n) * double(v - start);
    if (left_ms > (first ? 10.0 : 1.0) * budget_ms) return {};
  }
  return out;
}

fs::path palette_cache_path(const std::string& model_hash, const std::string& cache_root) {
  const std::string prefix = "sha256:";
  if (model_hash.rfind(prefix, 0) != 0 || model_hash.size() <= prefix.size()) return {};
  const fs::path root = cache_root.empty() ? fs::path(util::user_cache_dir())
                                           : fs::path(cache_root) / "adtree-studio";
  if (root.empty()) return {};
  return root / "palettes" / (model_hash.substr(prefix.size()) + ".rgb");
}

// The file: the colours (codebook_size x 3 bytes) and 16 hex digits of their checksum, so a
// damaged byte is found and the palette built again rather than shown in wrong colours.
constexpr size_t kCheckBytes = 16;

std::vector<uint8_t> read_cached_palette(const fs::path& file, int64_t codebook_size) {
  std::error_code ec;
  const uint64_t want = uint64_t(codebook_size * 3) + kCheckBytes;
  if (file.empty() || fs::file_size(file, ec) != want || ec) return {};
  std::ifstream in(file, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (bytes.size() != want) return {};
  const std::string check(bytes.end() - kCheckBytes, bytes.end());
  bytes.resize(bytes.size() - kCheckBytes);
  if (io::checksum_hex(bytes.data(), bytes.size()) != check) return {};
  return bytes;
}

bool write_cached_palette(const fs::path& file, const std::vector<uint8_t>& colours) {
  if (file.empty()) return false;
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(colours.data()), std::streamsize(colours.size()));
  out << io::checksum_hex(colours.data(), colours.size());
  out.close();
  if (out) fs::rename(tmp, file, ec);
  if (!out || ec) {
    fs::remove(tmp, ec);
    std::fprintf(stderr, "adtree engine: cannot cache token colours in %s\n",
                 file.string().c_str());
    return false;
  }
  return true;
}

PaletteBuild::PaletteBuild(std::shared_ptr<const model::ModelBundle> m, std::string dir,
                           fs::path cache)
    : model_(std::move(m)), dir_(std::move(dir)), cache_(std::move(cache)) {
  codebook_size_ = model_->vq ? model_->vq_config.codebook_size : 0;
  colours_.assign(size_t(codebook_size_ * 3), 0);
}

void PaletteBuild::step() {
  if (done()) return;
  next_ += colour_grid(*model_, next_, kSide, colours_);
}

}  // namespace adtree::engine
