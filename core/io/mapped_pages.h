// Pages of memory-mapped weight files (io/safetensors.h, map_safetensors): the loader hands back
// the pages of tensors it has copied into another layout (packed panels, the picture decoder's
// bf16 weights), so a model's resident memory is what inference reads, not the files as well.
#pragma once
#include <ATen/ATen.h>

#include <cstddef>

namespace adtree::io {

// The reader registers each file mapping for its lifetime.
void register_mapping(const void* begin, size_t size);
void unregister_mapping(const void* begin);

// Drops the whole pages inside `t`'s bytes from this process's resident set (madvise
// MADV_DONTNEED). They stay in the page cache and fault back in when read again, so the tensor
// keeps its values. Only for tensors of a registered file mapping whose memory nobody wrote to:
// the mappings are private, and a page written in place would return to the file's bytes.
// A no-op (false) for any other tensor. Returns whether pages were released.
bool release_mapped_pages(const at::Tensor& t);

}  // namespace adtree::io
