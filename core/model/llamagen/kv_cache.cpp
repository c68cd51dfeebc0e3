#include "model/llamagen/kv_cache.h"

#include <c10/core/InferenceMode.h>

#include <cstring>

#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::model {

void KvCache::commit() {
  len += pending;
  pending = 0;
}

bool KvCache::compact_rows_in_place(const std::vector<int64_t>& rows, size_t first_moved) {
  // fp32 CPU caches (the lean path's): plain row copies, front to back, instead of an index_select
  // and a copy per layer and tensor (a tree step's commit was about 25 tensor operations).
  const auto& k0 = k.front();
  if (!k0.device().is_cpu() || k0.scalar_type() != at::kFloat || !key_bias.is_contiguous()) {
    return false;
  }
  for (const auto& t : k) {
    if (!t.is_contiguous()) return false;
  }
  for (const auto& t : v) {
    if (!t.is_contiguous()) return false;
  }
  const int64_t B = k0.size(0), H = k0.size(1), cap = k0.size(2), hd = k0.size(3);
  auto move_rows = [&](float* base, int64_t row_floats, int64_t rows_per_block, int64_t blocks) {
    for (int64_t b = 0; b < blocks; ++b) {
      float* block = base + b * rows_per_block * row_floats;
      for (size_t i = first_moved; i < rows.size(); ++i) {
        std::memmove(block + (len + int64_t(i)) * row_floats, block + (len + rows[i]) * row_floats,
                     sizeof(float) * size_t(row_floats));
      }
    }
  };
  for (size_t l = 0; l < k.size(); ++l) {
    move_rows(k[l].data_ptr<float>(), hd, cap, B * H);
    move_rows(v[l].data_ptr<float>(), hd, cap, B * H);
  }
  move_rows(key_bias.data_ptr<float>(), 1, key_bias.size(1), B);
  return true;
}

void KvCache::compact(const std::vector<int64_t>& rows) {
  c10::InferenceMode guard;  // the cache tensors are inference tensors
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= pending || (i > 0 && rows[i] <= rows[i - 1])) {
      throw Error("KvCache: kept rows must be increasing indices into the pending block");
    }
  }
  // rows[i] >= i, so copying row rows[i] to slot i front to back never overwrites a row still
  // needed; a prefix that is already in place (rows[i] == i) needs no copy at all.
  size_t first_moved = 0;
  while (first_moved < rows.size() && rows[first_moved] == int64_t(first_moved)) ++first_moved;
  if (first_moved < rows.size() && compact_rows_in_place(rows, first_moved)) return;
  if (first_moved < rows.size()) {
    std::vector<int64_t> src;
    for (size_t i = first_moved; i < rows.size(); ++i) src.push_back(len + rows[i]);
    auto idx =
        to_device_async(at::tensor(src, at::TensorOptions().dtype(at::kLong)), k[0].device());
    const int64_t dst = len + int64_t(first_moved), m = int64_t(src.size());
    for (size_t l = 0; l < k.size(); ++l) {
      k[l].narrow(2, dst, m).copy_(k[l].index_select(2, idx));
      v[l].narrow(2, dst, m).copy_(v[l].index_select(2, idx));
    }
    key_bias.narrow(1, dst, m).copy_(key_bias.index_select(1, idx));
  }
}

void KvCache::keep(const std::vector<int64_t>& rows) {
  compact(rows);
  len += int64_t(rows.size());
  pending = 0;
}

void KvCache::keep_pending(const std::vector<int64_t>& rows) {
  compact(rows);
  pending = int64_t(rows.size());
}

void KvCache::truncate(int64_t new_len) {
  if (new_len < 0 || new_len > len) throw Error("KvCache::truncate: length out of range");
  len = new_len;
  pending = 0;
}

}  // namespace adtree::model
