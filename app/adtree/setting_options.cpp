// The model, sampling and method flags shared by the verbs: a flag per entry of the settings table
// and the model options table (decode/settings/setting.h), its help, range, words and default
// (shown in --help) from the entry.
#include <string>

#include "commands.h"
#include "decode/settings/method_table.h"
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

void declare(Args& a, const decode::Setting& s) {
  if (s.scope == decode::Scope::Sampling) {  // the default is the model's (model.json "sampling")
    a.option(s.flag, s.value_name,
             cli_help(s) + "; default: the model's (" + s.default_text() + " without one)");
  } else {
    a.option(s.flag, s.value_name, cli_help(s), s.default_text());
  }
}

// The flags of `scope` given on the command line, over what `r` holds (only those given: the
// defaults are the structs', not a round trip through their text).
void apply_given(const Args& a, decode::Scope scope, decode::DecodeRequest& r) {
  for (const auto& s : decode::settings_table()) {
    if (s.scope == scope && !s.flag.empty() && a.given(s.flag)) s.set(r, s.parse(a.str(s.flag)));
  }
}
}  // namespace

void apply_given_settings(const Args& a, decode::DecodeRequest& r) {
  apply_given(a, decode::Scope::Sampling, r);
  apply_given(a, decode::Scope::Method, r);
}

void add_setting_option(Args& a, const std::string& key) {
  declare(a, decode::setting(key));
}

void add_model_options(Args& a) {
  a.option("model", "DIR", "model directory (default: $ADTREE_MODEL or the shipped model)");
  for (const auto& s : decode::model_options_table()) declare(a, s);
  a.option("t5", "DIR",
           "T5 text encoder for a LlamaGen t2i model (a Hugging Face flan-t5-xl directory): typed "
           "prompts instead of caption-embedding files");
}

model::LoadOptions load_options(const Args& a) {
  model::LoadOptions o;
  for (const auto& s : decode::model_options_table()) {
    if (a.given(s.flag)) s.set_load(o, s.parse(a.str(s.flag)));
  }
  if (a.given("t5")) o.text_encoder = a.str("t5");
  return o;
}

void add_setting_options(Args& a, decode::Scope scope) {
  for (const auto& s : decode::settings_table()) {
    if (!s.flag.empty() && s.scope == scope) declare(a, s);
  }
}

void add_sampling_options(Args& a) {
  add_setting_options(a, decode::Scope::Sampling);
}

decode::SamplingParams sampling_from(const Args& a, const model::ModelBundle& m) {
  decode::DecodeRequest r;
  r.sampling = decode::SamplingParams::of_model(m.manifest.sampling);
  apply_given(a, decode::Scope::Sampling, r);
  r.sampling.validate(m.gpt_config.vocab_size, m.gpt_config.image_tokens());
  return r.sampling;
}

// --method's help from the methods' rows: each key, and when a method's own settings make it lossy.
void add_method_options(Args& a, bool list) {
  std::string names, lossy;
  for (const auto& m : decode::method_table()) {
    names += (names.empty() ? "" : "|") + std::string(m.key);
    if (*m.lossy_note) lossy += std::string("; ") + m.key + " is lossy " + m.lossy_note;
  }
  a.option("method", list ? "LIST" : "NAME",
           (list ? "comma-separated methods, each optionally METHOD:RULE with a --verify rule, or "
                   "METHOD:RULE:HEAD with a --head, then method settings of its own as @FLAG=VALUE "
                   "(adt@adt-grid-tree=off): "
                 : "decoding method: ") +
               names + " (trees are lossy with --relax lantern or cascade" + lossy +
               "); default adt, the fastest lossless method (docs/PERFORMANCE.md), or ar for a "
               "model without a draft head",
           "adt");
  add_setting_options(a, decode::Scope::Method);
}

std::string method_or_default(const Args& a, bool has_drafter) {
  return a.given("method") || has_drafter ? a.str("method") : "ar";
}

decode::MethodSettings method_from(const Args& a, const std::string& method) {
  decode::DecodeRequest r;
  auto& m = r.method;
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
  apply_given(a, decode::Scope::Method, r);
  return m;
}

}  // namespace adtree::cli
