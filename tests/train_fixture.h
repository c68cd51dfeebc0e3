// The training tests' fixture: a tiny synthetic dataset, a temporary folder per test (removed when
// the process ends), run options, and the checks every trainer gets (finite and falling losses, an
// exact resume). Shared by test_train and test_train_continuous.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "train/common.h"

namespace {

namespace fs = std::filesystem;
namespace tr = adtree::train;
using json = nlohmann::json;

// Twelve 8x8 pictures: a coloured square in one of four places on white, in two "styles" (filled
// or outlined); nine for training, three (two emoji) for validation.
adtree::io::Dataset tiny_dataset() {
  adtree::io::Dataset d;
  const int64_t n = 12;
  d.images = at::full({n, 8, 8, 3}, 255, at::TensorOptions().dtype(at::kByte));
  const char* colours[] = {"red", "green", "blue"};
  const uint8_t rgb[3][3] = {{220, 30, 30}, {30, 200, 60}, {40, 60, 220}};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = i % 3, place = (i / 3) % 4, r0 = (place / 2) * 4, c0 = (place % 2) * 4;
    const bool outline = i % 2 == 1;
    for (int64_t y = r0; y < r0 + 4; ++y) {
      for (int64_t x = c0; x < c0 + 4; ++x) {
        if (outline && y > r0 && y < r0 + 3 && x > c0 && x < c0 + 3) continue;
        for (int64_t k = 0; k < 3; ++k) d.images[i][y][x][k] = rgb[c][k];
      }
    }
    const char* places[] = {"top left", "top right", "bottom left", "bottom right"};
    d.captions.push_back(std::string(colours[c]) + " square " + places[place] +
                         (outline ? " twemoji" : " noto"));
    d.emoji.push_back(i / 2);
    d.style.push_back(outline ? "twemoji" : "noto");
    d.split.push_back(i >= 9 ? 1 : 0);
  }
  d.info = {{"name", "tiny"},
            {"sources", json::array({{{"style", "noto"},
                                      {"images_license", "Apache-2.0"},
                                      {"attribution", "test"},
                                      {"package", "p"},
                                      {"version", "1"}}})},
            {"metadata_license", "MIT"}};
  return d;
}

// A fresh folder per test (tests run as separate processes, possibly in parallel), removed when
// the process ends.
std::vector<std::string>& temp_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
class RemoveTempDirs : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    for (const auto& d : temp_dirs()) fs::remove_all(d, ec);
  }
};
[[maybe_unused]] auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new RemoveTempDirs);

std::string temp_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto p = fs::temp_directory_path() / ("adtree_test_train_" + std::string(info->name()) + "_" +
                                        name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  temp_dirs().push_back(p.string());
  return p.string();
}

tr::TrainOptions options(const std::string& out, int64_t steps, const json& config,
                         std::ostream* log) {
  tr::TrainOptions o;
  o.out = out;
  o.steps = steps;
  o.batch = 4;
  o.seed = 7;
  o.config = config;
  o.log = log;
  o.log_every = 100;
  return o;
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return s / double(to - from);
}

void expect_finite_and_falling(const std::vector<double>& losses) {
  ASSERT_GE(losses.size(), 4u);
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  const size_t k = losses.size() / 3;
  EXPECT_LT(mean(losses, losses.size() - k, losses.size()), mean(losses, 0, k));
}

// Runs `train(opts)` uninterrupted, then again stopped half-way and resumed; the resumed steps
// must reproduce the uninterrupted losses (same batches, noise, optimiser state).
template <class Train>
void expect_exact_resume(const std::string& name, int64_t steps, const json& config, Train train) {
  std::ostringstream log;
  auto full = train(options(temp_dir(name + "_full"), steps, config, &log));
  ASSERT_TRUE(full.finished);
  const auto dir = temp_dir(name + "_split");
  auto first = options(dir, steps, config, &log);
  first.stop_at = steps / 2;
  auto a = train(first);
  EXPECT_FALSE(a.finished);
  EXPECT_EQ(a.last_step, steps / 2);
  auto second = options(dir, steps, config, &log);
  second.resume = true;
  auto b = train(second);
  ASSERT_TRUE(b.finished);
  EXPECT_EQ(b.first_step, steps / 2);
  ASSERT_EQ(a.losses.size() + b.losses.size(), full.losses.size());
  for (size_t i = 0; i < b.losses.size(); ++i) {
    const double want = full.losses[a.losses.size() + i];
    EXPECT_NEAR(b.losses[i], want, 1e-6 * std::abs(want) + 1e-7)
        << "step " << a.losses.size() + i + 1;
  }
}

}  // namespace
