// The decoding methods, one row each: the key JSON files, the CLI and the settings use, its family
// and what it needs, the label and help the front ends show, the rule that says whether a request
// of it is lossless (and the note that says why not), and the colour ranges of the maps its
// settings imply. The CLI's help, the studio's method picker, its lossy notes and maps, and the
// run's statistics all read these rows. The settings a method reads are the table entries that
// name it (setting.h, Setting::reads). Code compares Method values; strings appear only where
// settings are read or written (method_from_string / to_string).
#pragma once
#include <string>
#include <vector>

#include "decode/settings/method_kind.h"

namespace adtree::decode {

struct DecodeRequest;
struct MethodSettings;

// What the maps of a run may show, known from its settings before the first token, so that colours
// mean the same from the first token to the last.
struct MethodRanges {
  double depth_max = 1;   // draft levels a step may have
  double accept_max = 1;  // tokens one step may commit
  double tree_d_min = 0, tree_d_max = 1;
  double tree_k_min = 0, tree_k_max = 1;
};

struct MethodInfo {
  Method method;
  const char* key;     // "ar", "static", "dynamic", "adt", "sjd", "pathspec", "sjd-pac", "pjd"
  Family family;       // Tree methods draft with a head; Jacobi methods guess without one
  bool needs_drafter;  // drafter.safetensors must be present
  const char* label;   // "ADT-Tree": the studio's picker, its queue and its figures
  const char* help;    // one or two sentences: the picker's tooltip, `adtree --help`
  // Whether a request commits AR's distribution, for its method's own reasons (the acceptance
  // rule, LANTERN or CASCADE, is checked for every method by is_lossless); and when not, why.
  bool (*lossless)(const DecodeRequest& r);
  const char* lossy_note;  // empty: never lossy by its own settings
  MethodRanges (*ranges)(const MethodSettings& m);
  bool on_codes = true;     // runs on a VQ model's codes
  bool on_vectors = false;  // runs on a continuous model's vectors
};

const std::vector<MethodInfo>& method_table();  // in the order the front ends list them
const MethodInfo& method_info(Method m);
std::string to_string(Method m);
// Throws adtree::Error naming the unknown word and the known keys.
Method method_from_string(const std::string& key);
bool is_tree(Method m);
bool is_jacobi(Method m);
// Whether the method runs on a model whose tokens are `kind` (the studio disables the others, the
// decoders refuse them by name).
bool runs_on(Method m, TokenKind kind);
std::string to_string(TokenKind kind);

// The one lossless rule: the acceptance rule is lossless and the method's row says so. The run's
// statistics, the CLI and the studio's notes read it.
bool is_lossless(const DecodeRequest& r);

}  // namespace adtree::decode
