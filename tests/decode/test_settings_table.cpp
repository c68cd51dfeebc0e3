// The settings table (core/decode/settings/setting.h): every entry survives JSON and its own
// command-line text, is checked against its range only where its method reads it, and the front
// ends' names (keys, flags, sweep flags, studio sections) are unique and known.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "decode/settings/method.h"
#include "decode/settings/setting.h"
#include "model/model_dir.h"
#include "util/error.h"

using namespace adtree::decode;

namespace {

const ModelLimits kLimits{64, 16};  // a micro model: 64 codes, a 4 x 4 grid

// A request whose method reads the setting, with settings under which it applies (its condition
// met).
DecodeRequest reader_of(const Setting& s) {
  DecodeRequest r;
  auto& m = r.method;
  if (!s.methods.empty()) m.method = s.methods.front();
  if (s.condition == adtree::decode::Condition::AdtStepMode) m.adt.mode = AdtMode::Step;
  if (s.condition == adtree::decode::Condition::Lantern ||
      s.condition == adtree::decode::Condition::LanternDelta)
    m.acceptance = Acceptance::Lantern;
  if (s.condition == adtree::decode::Condition::LanternLambda)
    m.acceptance = Acceptance::Lantern, m.lantern.mode = LanternMode::Lambda;
  if (s.condition == adtree::decode::Condition::Cascade) m.acceptance = Acceptance::Cascade;
  fit_to_model(r, kLimits);
  return r;
}

void validate(const DecodeRequest& r) {
  validate_settings(r.method, r.sampling, kLimits.vocab, kLimits.image_tokens);
}

// A value other than the default that the entry allows.
SettingValue other_value(const Setting& s) {
  const auto d = s.get(DecodeRequest{});
  switch (s.type) {
    case SettingType::Int:
      return std::get<int64_t>(d) == int64_t(s.lo) ? int64_t(s.lo) + 1 : int64_t(s.lo);
    case SettingType::Real:
      return s.lo_open ? s.lo + 0.5 : std::get<double>(d) == s.lo ? s.lo + 0.25 : s.lo;
    case SettingType::Bool:
      return !std::get<bool>(d);
    case SettingType::Choice:
      return s.choices.back() == std::get<std::string>(d) ? s.choices.front() : s.choices.back();
    case SettingType::Text:
      break;
  }
  return std::string("some/file.json");
}

}  // namespace

TEST(SettingsTable, EveryEntryRoundTripsThroughJsonAndItsFlagText) {
  for (const auto& s : settings_table()) {
    DecodeRequest r;
    const auto v = other_value(s);
    s.set(r, v);
    const DecodeRequest back{MethodSettings::from_json(r.method.to_json()),
                             SamplingParams::from_json(r.sampling.to_json(), {}),
                             0,
                             {}};
    EXPECT_EQ(s.get(back), v) << s.key;
    EXPECT_EQ(s.parse(s.format(v)), v) << s.key;
    EXPECT_EQ(s.parse(s.default_text()), s.get(DecodeRequest{})) << s.key;
  }
}

TEST(SettingsTable, NamesAreUniqueAndEveryFlagHasHelp) {
  std::set<std::string> keys, flags, sweeps, sections;
  for (const auto& sec : setting_sections()) sections.insert(sec.id);
  for (const auto& s : settings_table()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    if (!s.flag.empty()) {
      EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
      EXPECT_FALSE(s.help_text.empty()) << s.key;
    }
    if (!s.sweep_flag.empty()) {
      EXPECT_TRUE(sweeps.insert(s.sweep_flag).second) << s.sweep_flag;
    }
    if (!s.section.empty()) {
      EXPECT_TRUE(sections.count(s.section)) << s.key;
    }
    if (s.type == SettingType::Choice || s.type == SettingType::Bool) {
      EXPECT_FALSE(s.choices.empty()) << s.key;
    }
  }
  EXPECT_EQ(setting("adt.beta").flag, "adt-beta");
  EXPECT_THROW(setting("adt.gamma"), adtree::Error);
}

// Each ranged entry: a value past either end fails naming the key and the flag on a method that
// reads it, and is ignored by a method that does not (a GUI keeps every group's values).
TEST(SettingsTable, RangesAreCheckedWhereTheMethodReadsThem) {
  for (const auto& s : settings_table()) {
    if (!s.ranged) continue;
    auto m = reader_of(s);
    ASSERT_NO_THROW(validate(m)) << s.key;
    const double below = s.lo_open ? s.lo : s.lo - 1;
    const double above = s.upper(kLimits) + 1;
    for (double bad : {below, above}) {
      if (std::isinf(bad)) continue;
      auto b = m;
      s.set(b, s.type == SettingType::Int ? SettingValue(int64_t(bad)) : SettingValue(bad));
      try {
        validate(b);
        ADD_FAILURE() << s.key << " = " << bad << " passed";
      } catch (const adtree::Error& e) {
        EXPECT_NE(std::string(e.what()).find(s.key + " (--" + s.flag + ")"), std::string::npos)
            << e.what();
      }
      if (s.methods.empty()) continue;
      b.method.method = s.methods.front() == Method::Ar ? Method::Sjd : Method::Ar;
      b.method.acceptance = Acceptance::Lossless;
      if (!s.read_by(b.method)) {
        EXPECT_NO_THROW(validate(b)) << s.key;
      }
    }
  }
}

TEST(SettingsTable, ModelBoundsFollowTheModel) {
  const auto& k = setting("lantern.k");
  EXPECT_EQ(k.upper({64, 16}), 63);
  EXPECT_EQ(k.upper({1024, 256}), 1023);
  EXPECT_EQ(setting("jacobi.window").upper({64, 16}), 15);
  EXPECT_EQ(setting("jacobi.pac_width").upper({8, 16}), 7);
  EXPECT_EQ(setting("jacobi.pac_width").upper({64, 16}), 16);
  DecodeRequest r;  // lantern.k = 100 by default: too many neighbours for 64 codes
  r.sampling.top_k = 100;
  fit_to_model(r, {64, 16});
  EXPECT_EQ(r.method.lantern.k, 63);
  EXPECT_EQ(r.method.jacobi.window, 15);
  EXPECT_EQ(r.sampling.top_k, 64);
  EXPECT_EQ(r.method.adt.beta, MethodSettings{}.adt.beta);  // already inside: unchanged
}

TEST(SettingsTable, FlagTextIsParsedOrRefusedByName) {
  const auto& budget = setting("dynamic_tree.budget");
  EXPECT_EQ(budget.parse("auto"), SettingValue(int64_t(0)));
  EXPECT_EQ(budget.format(int64_t(0)), "auto");
  EXPECT_EQ(budget.parse("12"), SettingValue(int64_t(12)));
  try {
    budget.parse("12.5");
    ADD_FAILURE();
  } catch (const adtree::Error& e) {
    EXPECT_STREQ(e.what(), "--budget must be a whole number or auto, not '12.5'");
  }
  const auto& relax = setting("jacobi.path_relax");
  EXPECT_EQ(relax.parse("on"), SettingValue(JacobiSettings::kPathRelaxDefault));
  EXPECT_EQ(relax.parse("off"), SettingValue(0.0));
  EXPECT_THROW(relax.parse("inf"), adtree::Error);
  EXPECT_EQ(setting("adt.grid").parse("off"), SettingValue(false));
  EXPECT_THROW(setting("adt.grid").parse("yes"), adtree::Error);
  EXPECT_THROW(setting("adt.mode").parse("jump"), adtree::Error);
}

// The model options are entries of the same kind: flags with help, the words they take, defaults
// from model::LoadOptions' initialisers, and a wrong word refused by its flag.
TEST(SettingsTable, ModelOptionsAreEntriesWithLoadOptionsDefaults) {
  const adtree::model::LoadOptions defaults;
  std::set<std::string> flags;
  for (const auto& s : model_options_table()) {
    EXPECT_EQ(s.scope, Scope::Model) << s.key;
    EXPECT_FALSE(s.flag.empty() || s.help_text.empty()) << s.key;
    EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    for (const auto& t : settings_table()) EXPECT_NE(t.flag, s.flag) << s.flag;
  }
  EXPECT_EQ(setting_in(model_options_table(), "dtype").default_text(), defaults.dtype);
  EXPECT_EQ(setting_in(model_options_table(), "device").default_text(), defaults.device);
  EXPECT_EQ(setting_in(model_options_table(), "vq_dtype").default_text(), defaults.vq_dtype);
  adtree::model::LoadOptions o;
  const auto& dtype = setting_in(model_options_table(), "dtype");
  dtype.set_load(o, dtype.parse("bf16"));
  EXPECT_EQ(o.dtype, "bf16");
  try {
    dtype.parse("fp8");
    ADD_FAILURE() << "fp8 was taken";
  } catch (const adtree::Error& e) {
    EXPECT_STREQ(e.what(), "--dtype must be fp32, bf16 or fp16, not 'fp8'");
  }
  EXPECT_THROW(setting_in(model_options_table(), "threads"), adtree::Error);
}
