// The continuous-family model the app ships beside the emoji model (resources/models/
// emoji-continuous, issue "CSpD"): it loads with the product's loader, carries its draft model and
// the defaults its card measured, and AR and CSpD draw a whole picture on it from the card's
// prompts, the same picture for the same seed.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "decode/continuous/continuous_decode.h"
#include "decode/settings/method_table.h"
#include "model/continuous/continuous_dir.h"
#include "model/continuous/token_colours.h"

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

// The studio paints each committed vector in its approximate colour until the next preview decode
// (model/continuous/token_colours.h). On a picture the model drew, the map assemble-continuous
// fitted on training tokens must come close to the decoded cells' mean colours: well under the
// error of painting every cell the picture's mean colour (a map fitted on random token grids
// instead was no better than that).
TEST(ShippedContinuousModel, TokenColoursApproximateTheDecodedCells) {
  const auto res = draw(decode::Method::Ar, 3);
  const auto& map = shipped().token_colours;
  ASSERT_EQ(map.size(), 15u);
  const auto cells =
      shipped().picture(res.tokens).to(at::kFloat).reshape({16, 4, 16, 4, 3}).mean({1, 3});
  const auto truth = cells.reshape({-1, 3});
  const auto mean = truth.mean(0);
  const auto tokens = res.tokens.contiguous();
  double err = 0, flat = 0;
  for (int64_t i = 0; i < 256; ++i) {
    const auto c = model::token_colour(map, tokens[i].data_ptr<float>(), 4);
    for (int k = 0; k < 3; ++k) {
      err += std::abs(double(c[size_t(k)]) - truth[i][k].item<double>());
      flat += std::abs(mean[k].item<double>() - truth[i][k].item<double>());
    }
  }
  std::printf("token colours: mean error %.1f levels (one flat colour: %.1f)\n", err / 768,
              flat / 768);
  EXPECT_LT(err, 0.5 * flat);
}
