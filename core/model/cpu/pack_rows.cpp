#include "model/cpu/pack_rows.h"

#include <sys/mman.h>

#include <cstdint>

#include "model/cpu/cpu_kernel.h"
#include "model/cpu/packed_weight.h"

namespace adtree::model {

namespace {

// Transparent huge pages for a fresh, untouched buffer (its whole 2 MiB pages); a hint only.
void advise_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHuge - 1) / kHuge * kHuge,
                  last = (begin + bytes) / kHuge * kHuge;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data, (void)bytes;
#endif
}

// Row r of the stacked parts, or null past the last row (a panel's zero padding).
template <class T>
std::vector<const T*> stacked_rows(const std::vector<at::Tensor>& parts, int64_t padded) {
  std::vector<const T*> rows;
  rows.reserve(size_t(padded));
  for (const auto& p : parts)
    for (int64_t r = 0; r < p.size(0); ++r) rows.push_back(p.data_ptr<T>() + r * p.size(1));
  rows.resize(size_t(padded), nullptr);
  return rows;
}

// fp32 panels [n_panels, in, 16]: panel p, input k holds the 16 rows' weights side by side.
void fill_fp32(const std::vector<const float*>& rows, int64_t in, int64_t scaled_rows, float scale,
               float* panels, int64_t n_panels) {
  run_panels(n_panels, n_panels * kPanelWidth * in, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* dst = panels + p * in * kPanelWidth;
      for (int64_t j = 0; j < kPanelWidth; ++j) {
        const int64_t r = p * kPanelWidth + j;
        const float* src = rows[size_t(r)];
        const float s = r < scaled_rows ? scale : 1.0f;
        for (int64_t k = 0; k < in; ++k) dst[k * kPanelWidth + j] = src ? src[k] * s : 0.0f;
      }
    }
  });
}

// bf16 panels [n_panels, pairs, 16, 2]: per k-pair, the 16 rows' (w[2k], w[2k + 1]) side by side.
void fill_bf16(const std::vector<const at::BFloat16*>& rows, int64_t in, int64_t scaled_rows,
               float scale, uint16_t* panels, int64_t n_panels) {
  const int64_t pairs = (in + 1) / 2;
  run_panels(n_panels, n_panels * kPanelWidth * in, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint16_t* dst = panels + p * pairs * kPanelWidth * 2;
      for (int64_t j = 0; j < kPanelWidth; ++j) {
        const int64_t r = p * kPanelWidth + j;
        const at::BFloat16* src = rows[size_t(r)];
        const bool scaled = r < scaled_rows;
        for (int64_t k = 0; k < 2 * pairs; ++k) {
          uint16_t v = 0;
          if (src && k < in) v = scaled ? round_to_bf16(float(src[k]) * scale) : src[k].x;
          dst[((k / 2) * kPanelWidth + j) * 2 + k % 2] = v;
        }
      }
    }
  });
}

}  // namespace

PackedWeight pack_rows(const std::vector<at::Tensor>& given, int64_t scaled_rows, float scale) {
  PackedWeight pw;
  if (given.empty()) return pw;
  std::vector<at::Tensor> parts;
  for (const auto& p : given) parts.push_back(p.defined() ? p.contiguous() : p);
  const auto dtype = parts[0].scalar_type();
  if (dtype != at::kFloat && dtype != at::kBFloat16) return pw;
  const int64_t in = parts[0].dim() == 2 ? parts[0].size(1) : -1;
  for (const auto& p : parts) {
    if (!p.defined() || p.dim() != 2 || !p.device().is_cpu() || p.scalar_type() != dtype ||
        p.size(1) != in)
      return pw;
    pw.n_out += p.size(0);
  }
  pw.in = in;
  const int64_t n_panels = (pw.n_out + kPanelWidth - 1) / kPanelWidth;
  const int64_t padded = n_panels * kPanelWidth;
  if (dtype == at::kFloat) {
    pw.panels = at::empty({n_panels, in, kPanelWidth}, at::kFloat);
    advise_huge_pages(pw.panels.data_ptr(), pw.panels.nbytes());
    fill_fp32(stacked_rows<float>(parts, padded), in, scaled_rows, scale,
              pw.panels.data_ptr<float>(), n_panels);
  } else {
    const int64_t pairs = (in + 1) / 2;
    pw.panels = at::empty({n_panels, pairs, kPanelWidth, 2}, at::kBFloat16);
    advise_huge_pages(pw.panels.data_ptr(), pw.panels.nbytes());
    // A bf16 tensor's mul_ by a number rounds the number to bf16 first; so does this.
    const float bf16_scale = float(at::BFloat16(scale));
    fill_bf16(stacked_rows<at::BFloat16>(parts, padded), in, scaled_rows, bf16_scale,
              reinterpret_cast<uint16_t*>(pw.panels.data_ptr()), n_panels);
  }
  return pw;
}

PackedWeight pack_weight(const at::Tensor& w) {
  return w.defined() && w.scalar_type() == at::kFloat ? pack_rows({w}) : PackedWeight{};
}

PackedWeight pack_inference_weight(const at::Tensor& w) {
  return pack_rows({w});
}

PackedWeight pack_weight_bf16(const at::Tensor& w) {
  if (!w.defined() || (w.scalar_type() != at::kFloat && w.scalar_type() != at::kBFloat16))
    return {};
  return pack_rows({w.to(at::kBFloat16)});
}

}  // namespace adtree::model
