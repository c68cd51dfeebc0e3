// adtree generate on a continuous-family model (issue "CSpD", part 3): the same flags as for the
// LlamaGen family (the settings table's), AR or CSpD, a PNG and optionally the run's statistics.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "decode/continuous/continuous_decode.h"
#include "decode/settings/method_table.h"
#include "util/error.h"
#ifdef ADTREE_HAVE_IMAGING
#include "imaging/image_io.h"
#endif

namespace adtree::cli {

namespace {

decode::DecodeRequest continuous_request(const Args& a, const model::ContinuousBundle& m) {
  const auto method = a.given("method") ? decode::method_from_string(a.str("method"))
                      : m.has_draft()   ? decode::Method::Cspd
                                        : decode::Method::Ar;
  auto r = decode::default_continuous_request(m, method);
  apply_given_settings(a, r);
  decode::check_continuous_request(m, r);
  return r;
}

void write_stats(const std::string& path, const model::ContinuousBundle& m,
                 const std::string& prompt, const decode::DecodeRequest& r,
                 const decode::ContinuousResult& res) {
  nlohmann::json j{{"model", m.dir},
                   {"family", "continuous"},
                   {"prompt", prompt},
                   {"seed", r.seed},
                   {"method", decode::to_string(r.method.method)},
                   {"sampling", r.sampling.to_json()},
                   {"method_settings", r.method.to_json()},
                   {"run", decode::to_json(res)},
                   {"stats", res.stats.to_json()}};
  std::ofstream f(path);
  if (!(f << j.dump(1) << "\n")) throw Error(path + ": cannot be written");
}

}  // namespace

int generate_continuous(const Args& a, const std::string& dir, const std::string& prompt,
                        uint64_t seed, int64_t count, int64_t scale) {
  const auto m = model::load_continuous_dir(dir);
  auto r = continuous_request(a, m);
  for (int64_t i = 0; i < count; ++i) {
    r.seed = seed + uint64_t(i);
    const auto res = decode::run_continuous(m, prompt, r);
    auto rgb = m.picture(res.tokens);
    if (scale > 1) rgb = rgb.repeat_interleave(scale, 0).repeat_interleave(scale, 1).contiguous();
    const auto out = numbered(a.str("out"), r.seed, count);
#ifdef ADTREE_HAVE_IMAGING
    imaging::write_image(out, rgb);
#endif
    if (a.given("stats")) write_stats(numbered(a.str("stats"), r.seed, count), m, prompt, r, res);
    if (!a.flag_set("quiet")) {
      std::printf("%s: %s, seed %llu, %.0f ms (%s", out.c_str(),
                  decode::to_string(r.method.method).c_str(), (unsigned long long)r.seed,
                  res.timing.total, "continuous");
      if (r.method.method == decode::Method::Cspd) {
        std::printf("; acceptance %.2f, %.2f tokens a round", res.acceptance(),
                    res.tokens_per_round());
      }
      std::printf(")\n");
    }
  }
  return 0;
}

}  // namespace adtree::cli
