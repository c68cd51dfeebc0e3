#include "decode/settings/setting.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "decode/settings/method.h"
#include "decode/settings/method_table.h"
#include "model/model_dir.h"
#include "util/error.h"
#include "util/json_int.h"
#include "util/number_text.h"

namespace adtree::decode {

namespace {

std::string or_list(const std::vector<std::string>& words) {
  std::string list;
  for (size_t i = 0; i < words.size(); ++i)
    list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return list;
}

bool parse_number(const std::string& text, double* out) {
  try {
    size_t used = 0;
    *out = std::stod(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

Setting::Setting(std::string k, Scope sc, SettingType t, Get g, Set s)
    : key(std::move(k)), scope(sc), type(t), get(std::move(g)), set(std::move(s)) {}

Setting::Setting(std::string k, SettingType t, GetLoad g, SetLoad s)
    : key(std::move(k)),
      scope(Scope::Model),
      type(t),
      get_load(std::move(g)),
      set_load(std::move(s)) {}

Setting& Setting::cli(std::string flag_name, std::string value_name_) {
  flag = std::move(flag_name);
  value_name = std::move(value_name_);
  return *this;
}
Setting& Setting::help(std::string text) {
  help_text = std::move(text);
  return *this;
}
Setting& Setting::range(double lo_, double hi_, Bound model_bound) {
  lo = lo_, hi = hi_, ranged = true, bound = model_bound;
  return *this;
}
Setting& Setting::above(double lo_, double hi_) {
  lo = lo_, hi = hi_, ranged = true, lo_open = true;
  return *this;
}
Setting& Setting::words(std::vector<std::string> w) {
  choices = std::move(w);
  type = SettingType::Choice;  // a text member that takes one of these words
  return *this;
}
Setting& Setting::bool_words(std::string on, std::string off) {
  choices = {std::move(on), std::move(off)};
  return *this;
}
Setting& Setting::names(std::vector<std::pair<std::string, double>> n) {
  named = std::move(n);
  return *this;
}
Setting& Setting::reads(std::vector<Method> m, Condition c) {
  methods = std::move(m);
  condition = c;
  return *this;
}
Setting& Setting::studio(std::string section_id, std::string row_label, double step_,
                         int decimals_) {
  section = std::move(section_id);
  label = std::move(row_label);
  step = step_;
  decimals = decimals_;
  return *this;
}
Setting& Setting::studio_top(double t) {
  top = t;
  return *this;
}
Setting& Setting::studio_special(std::string text) {
  special = std::move(text);
  return *this;
}
Setting& Setting::check_text(std::string text) {
  check_label = std::move(text);
  return *this;
}
Setting& Setting::sweep(std::string flag_name, std::string label_name) {
  sweep_flag = std::move(flag_name);
  sweep_label = std::move(label_name);
  return *this;
}
Setting& Setting::soak(std::vector<SettingValue> values) {
  soak_values = std::move(values);
  return *this;
}

Setting& Setting::only_on(TokenKind kind) {
  any_tokens = false;
  tokens = kind;
  return *this;
}

Setting& Setting::not_in(std::string family) {
  unread_families.push_back(std::move(family));
  return *this;
}

bool Setting::read_on(TokenKind kind) const {
  return any_tokens || tokens == kind;
}

bool Setting::read_on(TokenKind kind, const std::string& family) const {
  return read_on(kind) &&
         std::find(unread_families.begin(), unread_families.end(), family) == unread_families.end();
}

bool Setting::read_by(const MethodSettings& m) const {
  if (!methods.empty() && std::find(methods.begin(), methods.end(), m.method) == methods.end())
    return false;
  switch (condition) {
    case Condition::Always:
      return true;
    case Condition::AdtStepMode:
      return m.adt.mode == AdtMode::Step;
    case Condition::Lantern:
      return m.acceptance == Acceptance::Lantern;
    case Condition::LanternDelta:
      return m.acceptance == Acceptance::Lantern && m.lantern.mode == LanternMode::Delta;
    case Condition::LanternLambda:
      return m.acceptance == Acceptance::Lantern && m.lantern.mode == LanternMode::Lambda;
    case Condition::Cascade:
      return m.acceptance == Acceptance::Cascade;
  }
  return true;
}

std::string Setting::readers_text() const {
  std::string s;
  for (auto m : methods) s += (s.empty() ? "" : ", ") + to_string(m);
  const char* when = condition == Condition::AdtStepMode     ? "--adt-mode step"
                     : condition == Condition::Lantern       ? "--relax lantern"
                     : condition == Condition::LanternDelta  ? "--relax lantern, delta mode"
                     : condition == Condition::LanternLambda ? "--relax lantern, lambda mode"
                     : condition == Condition::Cascade       ? "--relax cascade"
                                                             : nullptr;
  if (when) s += (s.empty() ? "with " : " with ") + std::string(when);
  return s;
}

double Setting::upper(const ModelLimits& l) const {
  const bool known = l.vocab > 0 && l.image_tokens > 0;
  double model = std::numeric_limits<double>::infinity();
  if (known && bound == Bound::Vocab) model = double(l.vocab);
  if (known && bound == Bound::BelowVocab) model = double(l.vocab - 1);
  if (known && bound == Bound::ImageTokens) model = double(l.image_tokens);
  if (known && bound == Bound::BelowImageTokens) model = double(l.image_tokens - 1);
  return std::min(hi, model);
}

SettingValue Setting::parse(const std::string& text) const {
  const std::string who = flag.empty() ? "'" + key + "'" : "--" + flag;
  if (type == SettingType::Text) return text;
  if (type == SettingType::Choice || type == SettingType::Bool) {
    const auto it = std::find(choices.begin(), choices.end(), text);
    if (it == choices.end())
      throw Error(who + " must be " + or_list(choices) + ", not '" + text + "'");
    if (type == SettingType::Bool) return it == choices.begin();
    return text;
  }
  for (const auto& [word, value] : named) {
    if (word == text) return type == SettingType::Int ? SettingValue(int64_t(value)) : value;
  }
  std::string alternatives;  // " or auto", " or off, on"
  for (const auto& n : named) alternatives += (alternatives.empty() ? " or " : ", ") + n.first;
  double v = 0;
  if (!parse_number(text, &v) || !std::isfinite(v) ||
      (type == SettingType::Int && (v != std::floor(v) || std::fabs(v) > 9e15))) {
    throw Error(who + " must be " +
                (type == SettingType::Int ? std::string("a whole number") : "a number") +
                alternatives + ", not '" + text + "'");
  }
  return type == SettingType::Int ? SettingValue(int64_t(v)) : SettingValue(v);
}

std::string Setting::format(const SettingValue& v) const {
  if (type == SettingType::Bool) return choices[std::get<bool>(v) ? 0 : 1];
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  const double d = type == SettingType::Int ? double(std::get<int64_t>(v)) : std::get<double>(v);
  for (const auto& [word, value] : named) {
    if (value == d) return word;
  }
  return type == SettingType::Int ? std::to_string(std::get<int64_t>(v)) : number_text(d);
}

std::string Setting::default_text() const {
  return format(scope == Scope::Model ? get_load(model::LoadOptions{}) : get(DecodeRequest{}));
}

std::string Setting::range_text(const ModelLimits& limits) const {
  const double top_ = upper(limits);
  if (lo_open)
    return std::isinf(top_) ? "> " + number_text(lo)
                            : "(" + number_text(lo) + ", " + number_text(top_) + "]";
  const bool known = limits.vocab > 0 && limits.image_tokens > 0;
  if (!known && bound != Bound::None) {  // the model's bound by name: "1..codebook size"
    const char* name = bound == Bound::Vocab         ? "codebook size"
                       : bound == Bound::BelowVocab  ? "codebook size - 1"
                       : bound == Bound::ImageTokens ? "image tokens"
                                                     : "image tokens - 1";
    return number_text(lo) + ".." + (std::isinf(hi) ? "" : number_text(hi) + ", at most ") + name;
  }
  const std::string t = std::isinf(top_) ? "" : number_text(top_);
  if (type == SettingType::Int) return number_text(lo) + ".." + t;
  return std::isinf(top_) ? ">= " + number_text(lo) : "[" + number_text(lo) + ", " + t + "]";
}

void Setting::check(const SettingValue& v, const ModelLimits& limits) const {
  const std::string who = key + (flag.empty() ? "" : " (--" + flag + ")");
  const std::string invalid =
      scope == Scope::Sampling ? "invalid sampling setting: " : "invalid method setting: ";
  if (type == SettingType::Choice) {
    const auto& w = std::get<std::string>(v);
    if (!choices.empty() && std::find(choices.begin(), choices.end(), w) == choices.end())
      throw Error(invalid + who + " must be " + or_list(choices) + ", not '" + w + "'");
    return;
  }
  if (!ranged || (type != SettingType::Int && type != SettingType::Real)) return;
  const double d = type == SettingType::Int ? double(std::get<int64_t>(v)) : std::get<double>(v);
  const bool inside = std::isfinite(d) && (lo_open ? d > lo : d >= lo) && d <= upper(limits);
  if (!inside) {
    const auto r = range_text(limits);  // "1..64", "[0, 1]", "> 1", ">= 0"
    throw Error(invalid + who + " must be " + (r[0] == '>' ? "" : "in ") + r + ", got " +
                format(v));
  }
}

nlohmann::json Setting::to_json(const SettingValue& v) const {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

SettingValue Setting::from_json(const nlohmann::json& v) const {
  // json_field names the key in its message: "'pjd.window' must be a number, got ...".
  const nlohmann::json obj = {{key, v}};
  switch (type) {
    case SettingType::Int:
      return json_int(v, key);
    case SettingType::Real:
      return json_field(obj, key.c_str(), 0.0);
    case SettingType::Bool:
      return json_field(obj, key.c_str(), false);
    case SettingType::Choice:
    case SettingType::Text:
      break;
  }
  return json_field(obj, key.c_str(), std::string());
}

std::string Setting::group() const {
  const auto dot = key.find('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

std::string Setting::field() const {
  const auto dot = key.find('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

void fit_to_model(DecodeRequest& m, const ModelLimits& limits) {
  for (const auto& s : settings_table()) {
    if (!s.ranged || (s.type != SettingType::Int && s.type != SettingType::Real)) continue;
    const auto v = s.get(m);
    const double d =
        s.type == SettingType::Int ? double(std::get<int64_t>(v)) : std::get<double>(v);
    const double low = s.lo_open ? d : std::max(d, s.lo);
    const double fitted = std::min(low, s.upper(limits));
    if (fitted == d) continue;
    s.set(m, s.type == SettingType::Int ? SettingValue(int64_t(fitted)) : SettingValue(fitted));
  }
}

const Setting& setting_in(const std::vector<Setting>& table, const std::string& key) {
  for (const auto& s : table) {
    if (s.key == key) return s;
  }
  throw Error("unknown setting '" + key + "' (internal error)");
}

const Setting& setting(const std::string& key) {
  return setting_in(settings_table(), key);
}

}  // namespace adtree::decode
