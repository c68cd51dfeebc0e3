// The method flags shared by generate, bench and sweep: a flag per entry of the settings table
// (decode/settings/setting.h), its help, range and default (shown in --help) from the entry.
#include <string>

#include "commands.h"
#include "decode/settings/setting.h"
#include "util/error.h"

namespace adtree::cli {

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
  return m;
}

}  // namespace adtree::cli
