// A restricted unpickler for PyTorch checkpoints (torch.save, issue "Real checkpoints without
// Python"). It reads Python's pickle opcodes into inert values and knows only what a state dict
// needs: dicts (OrderedDict too), lists, tuples, numbers, strings, the storages behind tensors
// (persistent ids) and the calls that rebuild a tensor or a parameter from them. It never runs
// code: every global is looked up in a fixed table, and one outside it is refused by its name.
// argparse.Namespace (LlamaGen saves its training arguments) is kept as a record of its fields.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace adtree::io::pickle {

using Ref = uint32_t;  // index of a value in Pickle::values
inline constexpr Ref kNoRef = 0xffffffffu;

enum class Kind : uint8_t {
  None,
  Bool,
  Int,
  Float,
  Str,
  Bytes,
  Tuple,
  List,
  Dict,     // items: keys and values interleaved, in insertion order
  Global,   // text: "module.name" of an allowed global, not yet called
  Record,   // text: the class (argparse.Namespace); state: its fields (a Dict)
  Storage,  // text: the storage's key in the archive; dtype, numel
  Tensor,   // items[0]: its Storage; offset, size, stride (in elements)
};

struct Value {
  Kind kind = Kind::None;
  int64_t i = 0;  // Bool, Int; Storage: numel; Tensor: storage offset
  double f = 0;
  std::string text;   // Str, Bytes, Global, Record, Storage (key)
  std::string dtype;  // Storage: the storage class ("FloatStorage", "BFloat16Storage", ...)
  std::vector<Ref> items;
  std::vector<int64_t> size, stride;  // Tensor
  Ref state = kNoRef;                 // Record
};

struct Pickle {
  std::vector<Value> values;
  Ref root = kNoRef;
  size_t end = 0;  // bytes read, up to and including STOP (a legacy file holds several pickles)

  const Value& at(Ref r) const { return values.at(r); }
  // The value under `key` in dict `d` (a Str key), or kNoRef.
  Ref find(Ref d, const std::string& key) const;
};

// Unpickles one object from `data` (`what` names it in errors). Throws adtree::Error for a
// truncated or malformed stream, an opcode it does not read, or a global outside its table.
Pickle unpickle(const uint8_t* data, size_t size, const std::string& what);

}  // namespace adtree::io::pickle
