// The continuous-family model the app ships beside the emoji model (resources/models/
// emoji-continuous, issue "CSpD"): it loads with the product's loader, carries its draft model and
// the defaults its card measured, and AR and CSpD draw a whole picture on it from the card's
// prompts, the same picture for the same seed.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "decode/continuous/continuous_decode.h"
#include "decode/settings/method_table.h"
#include "model/continuous/continuous_dir.h"

using namespace adtree;

namespace {

const model::ContinuousBundle& shipped() {
  // Loaded once for the file; a missing or broken model fails every test here.
  static const model::ContinuousBundle bundle =
      model::load_continuous_dir(ADTREE_SHIPPED_CONTINUOUS);
  return bundle;
}

decode::ContinuousResult draw(decode::Method method, uint64_t seed) {
  auto r = decode::default_continuous_request(shipped(), method);
  r.seed = seed;
  return decode::run_continuous(shipped(), "cat face noto", r);
}

}  // namespace

TEST(ShippedContinuousModel, LoadsWithItsDraftModelAndMeasuredDefaults) {
  const auto& m = shipped();
  ASSERT_TRUE(m.has_draft()) << "CSpD needs the draft model";
  EXPECT_EQ(m.manifest.at("name"), "emoji-continuous");
  EXPECT_GT(m.vocab.size(), 1000u);
  // The card's measured choice (docs/cspd.md): fixed variances make the std product S exactly 1,
  // and the inner temperature relaxes the last step's test.
  EXPECT_TRUE(m.default_fixed_variance());
  EXPECT_GT(m.default_inner_temperature(), 1.0);
  EXPECT_TRUE(m.manifest.at("license").contains("weights"));
  uint64_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(ADTREE_SHIPPED_CONTINUOUS))
    if (e.is_regular_file()) bytes += e.file_size();
  EXPECT_LE(bytes, 20u * 1000 * 1000);
}

TEST(ShippedContinuousModel, ArAndCspdDrawAWholePictureAndRepeatForTheSameSeed) {
  const auto& m = shipped();
  for (auto method : {decode::Method::Ar, decode::Method::Cspd}) {
    const auto res = draw(method, 3);
    ASSERT_EQ(res.tokens.sizes(), (std::vector<int64_t>{256, 4})) << decode::to_string(method);
    EXPECT_TRUE(res.tokens.isfinite().all().item<bool>());
    const auto rgb = m.picture(res.tokens);
    EXPECT_EQ(rgb.sizes(), (std::vector<int64_t>{64, 64, 3}));
    if (method == decode::Method::Cspd) {
      EXPECT_GT(res.drafted, 0);
      // With the shipped defaults the trained draft's tokens stand often (docs/cspd.md).
      EXPECT_GT(double(res.accepted), 0.3 * double(res.drafted));
    }
    EXPECT_TRUE(at::equal(draw(method, 3).tokens, res.tokens)) << decode::to_string(method);
  }
}
