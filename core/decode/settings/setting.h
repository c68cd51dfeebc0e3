// One setting of a generation, declared once (docs/design/ARCHITECTURE.md, "The settings table"):
// a member of the request's sampling (SamplingParams) or of its method (MethodSettings), with its
// JSON key, type, default, range, the methods that read it and its help text, and what the front
// ends make of it: a CLI flag, a studio form row, a sweep axis, the soak's variations. An entry is
// built by chaining, as llama.cpp's common_arg:
//
//   field("pjd.window", &MethodSettings::pjd, &PjdSettings::window)
//       .cli("pjd-window", "N").range(1, 64).reads({Method::Pjd})
//       .help("PJD: tokens fed per row and step")
//       .studio("pjd", "Window").sweep("pjd-windows", "window");
//
// The entries are in settings_table.cpp; adding a setting is one entry there plus the code that
// uses it. The defaults are the structs' member initialisers (a model's sampling over them). Rules
// that tie settings together (d_min <= d_max, a budget the tree can hold) stay in
// MethodSettings::validate_links.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "decode/settings/method_kind.h"

namespace adtree::model {
struct LoadOptions;
}

namespace adtree::decode {

struct MethodSettings;
struct DecodeRequest;

// Which part of a run an entry addresses: the request's sampling (JSON "sampling", flat keys; a
// model's defaults under the project's) or its method settings (JSON "method_settings",
// "group.member"), or the options the model is loaded with (model::LoadOptions: device, precision;
// the entries of model_options_table, which the run's settings record as it ran).
enum class Scope { Sampling, Method, Model };

using SettingValue = std::variant<int64_t, double, bool, std::string>;
enum class SettingType { Int, Real, Bool, Choice, Text };

// An upper bound that comes from the model: its codebook size V or its image tokens T.
enum class Bound { None, Vocab, BelowVocab, ImageTokens, BelowImageTokens };
struct ModelLimits {
  int64_t vocab = 0, image_tokens = 0;  // 0: not known (no model loaded)
};

// When a setting matters, besides its method being chosen.
enum class Condition { Always, AdtStepMode, Lantern, LanternDelta, LanternLambda, Cascade };

struct Setting {
  using Get = std::function<SettingValue(const DecodeRequest&)>;
  using Set = std::function<void(DecodeRequest&, const SettingValue&)>;
  using GetLoad = std::function<SettingValue(const model::LoadOptions&)>;
  using SetLoad = std::function<void(model::LoadOptions&, const SettingValue&)>;

  Setting(std::string key, Scope scope, SettingType type, Get get, Set set);
  Setting(std::string key, SettingType type, GetLoad get, SetLoad set);  // Scope::Model

  // ---- The declaration, chained (each returns *this).
  Setting& cli(std::string flag_name, std::string value_name);
  Setting& help(std::string text);
  Setting& range(double lo, double hi, Bound model_bound = Bound::None);
  // An open lower bound (lo itself is not allowed), up to hi.
  Setting& above(double lo, double hi = std::numeric_limits<double>::infinity());
  Setting& words(std::vector<std::string> choices);      // Choice: the allowed words
  Setting& bool_words(std::string on, std::string off);  // Bool: its words on the command line
  Setting& names(std::vector<std::pair<std::string, double>> named);  // "auto" = 0
  Setting& reads(std::vector<Method> methods, Condition when = Condition::Always);
  // Read only on models of this token kind (top-k on codes, the head's variance on vectors).
  Setting& only_on(TokenKind kind);
  // Not read by models of this family (ModelInfo::kind: "continuous" makes its tokens in raster
  // order, so MAR's masking schedule and CFG ramp mean nothing to it).
  Setting& not_in(std::string family);
  Setting& studio(std::string section_id, std::string row_label, double step = 1, int decimals = 0);
  Setting& studio_top(double hi);             // the form's upper end where the range has none
  Setting& studio_special(std::string text);  // the form's text for the lowest value
  Setting& check_text(std::string text);      // Bool: the check box's text
  Setting& sweep(std::string flag_name, std::string label_name);
  Setting& soak(std::vector<SettingValue> values);

  // ---- What the front ends ask of it.
  bool read_by(const MethodSettings& m) const;  // the chosen method (and rule) reads it
  bool read_on(TokenKind kind) const;           // a model of this token kind reads it
  // A model of this token kind and family (ModelInfo::kind) reads it.
  bool read_on(TokenKind kind, const std::string& family) const;
  std::string readers_text() const;  // "adt", "dynamic, adt", "" for every method
  double upper(const ModelLimits& limits) const;
  // Text from a command line, a sweep list or a word: typed, not yet range-checked. Throws
  // adtree::Error naming the flag (or key) and what it takes.
  SettingValue parse(const std::string& text) const;
  std::string format(const SettingValue& v) const;  // the flag's word for it: "auto", "on", "8"
  std::string default_text() const;                 // format() of the default
  // Throws adtree::Error "invalid method setting: <key> (--flag) must be ..." outside the range
  // ("invalid sampling setting: ..." for a sampling entry).
  void check(const SettingValue& v, const ModelLimits& limits) const;
  std::string range_text(const ModelLimits& limits) const;  // "1..64", "[0, 1]", "> 1"
  nlohmann::json to_json(const SettingValue& v) const;
  SettingValue from_json(const nlohmann::json& v) const;  // throws naming the key
  std::string group() const;                              // "pjd" of "pjd.window"; "" at the top
  std::string field() const;                              // "window"

  std::string key;  // the JSON path: "pjd.window", or "verify" at the top level
  Scope scope;
  SettingType type;
  Get get;  // Sampling and Method entries
  Set set;
  GetLoad get_load;  // Model entries
  SetLoad set_load;
  std::string flag, value_name, help_text;
  double lo = 0, hi = 0;
  bool ranged = false, lo_open = false;
  Bound bound = Bound::None;
  std::vector<std::string> choices;  // Choice words; Bool: {on word, off word}
  std::vector<std::pair<std::string, double>> named;
  std::vector<Method> methods;  // empty: every method
  bool any_tokens = true;       // false: only models of token kind `tokens` read it
  TokenKind tokens = TokenKind::Codes;
  std::vector<std::string> unread_families;
  Condition condition = Condition::Always;
  std::string section, label, special, check_label;
  double step = 1, top = 0;
  int decimals = 0;
  std::string sweep_flag, sweep_label;
  std::vector<SettingValue> soak_values;
};

// The table, in the order front ends list the settings: sampling first (settings_table.cpp).
const std::vector<Setting>& settings_table();
// Throws adtree::Error for an unknown key (a programming error in a front end).
const Setting& setting(const std::string& key);
// The options a model is loaded with, entries of the same kind (Scope::Model): device, dtype,
// vq_dtype, their defaults model::LoadOptions' initialisers.
const std::vector<Setting>& model_options_table();
// The entry of `table` with this key; throws adtree::Error for an unknown one (internal error).
const Setting& setting_in(const std::vector<Setting>& table, const std::string& key);

// Every numeric setting moved into its range for this model (a soak's random picks, a GUI's values
// after another model loads): a default of 100 neighbours on a 64-code book becomes 63.
void fit_to_model(DecodeRequest& r, const ModelLimits& limits);

// The studio's sections of settings, in order: id, title, and a note shown above the rows.
struct SettingSection {
  std::string id, title, note;
  bool warning = false;  // the note is a lossy-result warning (drawn in orange)
};
const std::vector<SettingSection>& setting_sections();

}  // namespace adtree::decode
