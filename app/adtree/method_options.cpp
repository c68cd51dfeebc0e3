// The method flags shared by generate and bench: every constant of SPEC_DECODING.md is a flag whose
// default (shown in --help) comes from decode::MethodSettings.
#include <algorithm>
#include <sstream>
#include <vector>

#include "commands.h"
#include "decode/setting.h"
#include "util/error.h"

namespace adtree::cli {

namespace {
// The value of a flag that takes one of a few words; anything else is an error naming them.
std::string one_of(const Args& a, const std::string& flag, const std::vector<std::string>& words) {
  const auto v = a.str(flag);
  if (std::find(words.begin(), words.end(), v) != words.end()) return v;
  std::string list;
  for (size_t i = 0; i < words.size(); ++i)
    list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  throw Error("--" + flag + " must be " + list + ", not '" + v + "'");
}

template <class T>
std::string str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

namespace {
// A setting's help line: the methods that read it, its text, its range and its words.
std::string cli_help(const decode::Setting& s) {
  const auto who = s.readers_text();
  std::string h = who.empty() ? s.help_text : who + ": " + s.help_text;
  if (s.ranged) h += " (" + s.range_text({}) + ")";
  std::string words;
  for (const auto& w : s.choices) words += (words.empty() ? "" : ", ") + w;
  for (const auto& n : s.named) words += (words.empty() ? "" : ", ") + n.first;
  if (!words.empty()) h += "; " + std::string(s.named.empty() ? "one of " : "or ") + words;
  return h;
}
}  // namespace

void add_method_options(Args& a, bool list) {
  const decode::MethodSettings d;
  std::string names;
  for (const auto& m : decode::method_table())
    names += (names.empty() ? "" : "|") + std::string(m.key);
  a.option("method", list ? "LIST" : "NAME",
           (list ? "comma-separated methods, each optionally METHOD:RULE with a --verify rule: "
                 : "decoding method: ") +
               names +
               " (pathspec with K > 1 paths is lossless only with --verify coupled, the default: "
               "otherwise picking the longest accepted chain biases the samples, see "
               "docs/JACOBI.md; pjd is lossy unless --pjd-rows 1, see docs/pjd.md); default "
               "adt, the fastest lossless method (docs/PERFORMANCE.md), or ar for a model "
               "without a draft head",
           "adt");
  for (const auto& s : decode::method_settings_table()) {
    if (!s.flag.empty()) a.option(s.flag, s.value_name, cli_help(s), s.default_text());
  }
  a.option("pjd-window", "N",
           "PJD: tokens fed per row and step (its frontier token and N - 1 drafts)",
           str(d.pjd.window))
      .option("pjd-row-offset", "N", "PJD: a row starts when the row above has N tokens",
              str(d.pjd.row_offset))
      .option("pjd-rows", "N",
              "PJD: active rows at most (0 = as the offset allows; 1 = lossless, one row at a "
              "time)",
              str(d.pjd.max_rows))
      .option("pjd-mask", "MASK",
              "PJD: row-causal (a row's drafts see no other row's drafts) or causal",
              d.pjd.row_mask ? "row-causal" : "causal")
      .option("pjd-init", "INIT",
              "PJD: new guesses are spatial (the cell above, else the left one) or random codes "
              "(the paper's)",
              d.pjd.spatial_init ? "spatial" : "random");
}

std::string method_or_default(const Args& a, bool has_drafter) {
  return a.given("method") || has_drafter ? a.str("method") : "ar";
}

decode::MethodSettings method_from(const Args& a, const std::string& method) {
  decode::MethodSettings m;
  m.method = decode::method_from_string(method);
  // ADT-Tree picks (d, k) itself: --depth / --width would be silently ignored, so say so (they
  // are fine in a list that also runs the dynamic tree).
  if (m.method == decode::Method::Adt && (a.given("depth") || a.given("width")) &&
      a.str("method").find("dynamic") == std::string::npos) {
    throw Error(
        "--depth and --width shape the dynamic tree; ADT-Tree chooses (d, k) per step within "
        "--adt-d-min..--adt-d-max and --adt-k-min..--adt-k-max, starting from --adt-d0, "
        "--adt-k0");
  }
  // Only the flags given: the defaults are the struct's, not a round trip through their text.
  for (const auto& s : decode::method_settings_table()) {
    if (!s.flag.empty() && a.given(s.flag)) s.set(m, s.parse(a.str(s.flag)));
  }
  m.pjd.window = a.integer("pjd-window");
  m.pjd.row_offset = a.integer("pjd-row-offset");
  m.pjd.max_rows = a.integer("pjd-rows");
  m.pjd.row_mask = one_of(a, "pjd-mask", {"row-causal", "causal"}) == "row-causal";
  m.pjd.spatial_init = one_of(a, "pjd-init", {"spatial", "random"}) == "spatial";
  return m;
}

}  // namespace adtree::cli
