// The decoding methods, once: each method's key (the word JSON files, the CLI and the settings
// use), its family and what it needs. Code compares Method values; strings appear only where
// settings are read or written (method_from_string / to_string).
#pragma once
#include <string>
#include <vector>

namespace adtree::decode {

enum class Method { Ar, Static, Dynamic, Adt, Sjd, PathSpec, SjdPac, Pjd };
enum class Family { Ar, Tree, Jacobi };

struct MethodInfo {
  Method method;
  const char* key;     // "ar", "static", "dynamic", "adt", "sjd", "pathspec", "sjd-pac", "pjd"
  Family family;       // Tree methods draft with a head; Jacobi methods guess without one
  bool needs_drafter;  // drafter.safetensors must be present
};

const std::vector<MethodInfo>& method_table();  // in the order the front ends list them
const MethodInfo& method_info(Method m);
std::string to_string(Method m);
// Throws adtree::Error naming the unknown word and the known keys.
Method method_from_string(const std::string& key);
inline bool is_tree(Method m) {
  return method_info(m).family == Family::Tree;
}
inline bool is_jacobi(Method m) {
  return method_info(m).family == Family::Jacobi;
}

}  // namespace adtree::decode
