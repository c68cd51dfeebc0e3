// Weights of one model part in one safetensors file or in shards, the Hugging Face convention:
// NAME-00001-of-00003.safetensors ... plus NAME.safetensors.index.json,
// {"metadata": {"total_size": bytes}, "weight_map": {tensor: shard file}}. Shards keep every file
// of a model small enough to travel (a GPU machine returns at most 16 MiB a file); they load as
// one memory-mapped tensor map, and a shard set that is incomplete or inconsistent is an
// adtree::Error naming the file, never a partly loaded model.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace adtree::io {

// The shard limit the trainers and the converter write by default.
constexpr uint64_t kShardBytes = 16ull << 20;

// `base` is the single file's path (DIR/gpt.safetensors). Maps it if it exists, else the shards
// its index (base + ".index.json") lists. Throws adtree::Error when neither exists or anything in
// the index or a shard is wrong.
std::map<std::string, at::Tensor> map_safetensors_set(const std::string& base);

// The files that hold `base`'s weights, for hashing: the single file, or the index and its shards
// (empty if neither exists).
std::vector<std::string> safetensors_set_files(const std::string& base);

// Writes `tensors` as one file when their data fits `max_bytes`, else as shards of at most
// `max_bytes` each (a tensor larger than that gets a shard of its own) plus the index. Removes
// what a previous write of the other layout left, so the directory holds one layout.
void write_safetensors_set(const std::string& base,
                           const std::map<std::string, at::Tensor>& tensors,
                           uint64_t max_bytes = kShardBytes,
                           const std::map<std::string, std::string>& metadata = {});

}  // namespace adtree::io
