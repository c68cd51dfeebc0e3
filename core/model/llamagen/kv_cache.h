// Preallocated key/value cache of the GPT for a fixed batch (2 with CFG: [cond; uncond]).
// A forward writes its q new rows right after the committed prefix as "pending" rows; the caller
// then commits them all (plain AR) or keeps a chosen subset (tree verification: the accepted path),
// which compacts those rows in place. Keys are stored after RoPE rotation.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace adtree::model {

struct KvCache {
  std::vector<at::Tensor> k, v;  // per layer [B, H, capacity, head_dim]
  // Additive attention bias per key row [B, capacity]: 0 for visible keys, -inf for padded
  // condition slots, which no query may see (LLAMAGEN.md, caption padding mask).
  at::Tensor key_bias;
  int64_t len = 0;      // committed rows
  int64_t pending = 0;  // rows written by the last forward after `len`

  int64_t batch() const { return k.empty() ? 0 : k[0].size(0); }
  int64_t capacity() const { return k.empty() ? 0 : k[0].size(2); }

  // Accepts every pending row (len += pending).
  void commit();
  // Keeps pending rows `rows` (strictly increasing indices into the pending block) as the next
  // committed rows, in that order, and drops the rest: in-place compaction, no recomputation.
  void keep(const std::vector<int64_t>& rows);
  // The same compaction, but the kept rows stay pending: scratch rows that the next forward's
  // block mask decides about query by query (PJD keeps its committed cells this way).
  void keep_pending(const std::vector<int64_t>& rows);
  // Drops committed rows beyond new_len (and any pending rows).
  void truncate(int64_t new_len);

 private:
  void compact(const std::vector<int64_t>& rows);  // pending rows `rows` to the front, in order
  // The same for fp32 CPU caches by row copies; false (nothing done) for any other cache.
  bool compact_rows_in_place(const std::vector<int64_t>& rows, size_t first_moved);
};

}  // namespace adtree::model
