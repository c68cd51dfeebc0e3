// adtree generate on a vector-token model (issue "CSpD", part 3; issue "MAR checkpoints"): the
// continuous family or MAR, with the same flags as for the LlamaGen family (the settings table's),
// AR or CSpD, a PNG and optionally the run's statistics. One template; the families differ in
// vector_family.h's overloads.
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "decode/settings/method_table.h"
#include "util/error.h"
#include "vector_family.h"
#ifdef ADTREE_HAVE_IMAGING
#include "imaging/image_io.h"
#endif

namespace adtree::cli {

namespace {

template <class Bundle>
decode::DecodeRequest vector_request(const Args& a, const Bundle& m) {
  const auto method = a.given("method") ? decode::method_from_string(a.str("method"))
                      : m.has_draft()   ? decode::Method::Cspd
                                        : decode::Method::Ar;
  auto r = default_request(m, method);
  apply_given_settings(a, r);
  check_request(m, r);
  return r;
}

template <class Bundle>
void write_stats(const std::string& path, const Bundle& m, const std::string& prompt,
                 const decode::DecodeRequest& r, const decode::ContinuousResult& res,
                 double picture_ms) {
  nlohmann::json j{{"model", m.dir},
                   {"family", family(m)},
                   {"prompt", prompt},
                   {"seed", r.seed},
                   {"method", decode::to_string(r.method.method)},
                   {"sampling", r.sampling.to_json()},
                   {"method_settings", r.method.to_json()},
                   {"run", decode::to_json(res)},
                   {"picture_ms", picture_ms},  // the VAE decode of the tokens
                   {"stats", res.stats.to_json()}};
  std::ofstream f(path);
  if (!(f << j.dump(1) << "\n")) throw Error(path + ": cannot be written");
}

template <class Bundle>
int generate_vectors(const Args& a, const Bundle& m, const std::string& prompt, uint64_t seed,
                     int64_t count, int64_t scale) {
  auto r = vector_request(a, m);
  for (int64_t i = 0; i < count; ++i) {
    r.seed = seed + uint64_t(i);
    const auto res = run_vectors(m, prompt, r);
    const auto p0 = std::chrono::steady_clock::now();
    auto rgb = m.picture(res.tokens);
    const double picture_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count();
    if (scale > 1) rgb = rgb.repeat_interleave(scale, 0).repeat_interleave(scale, 1).contiguous();
    const auto out = numbered(a.str("out"), r.seed, count);
#ifdef ADTREE_HAVE_IMAGING
    imaging::write_image(out, rgb);
#endif
    if (a.given("stats"))
      write_stats(numbered(a.str("stats"), r.seed, count), m, prompt, r, res, picture_ms);
    if (!a.flag_set("quiet")) {
      std::printf("%s: %s, seed %llu, %.0f ms (%s", out.c_str(),
                  decode::to_string(r.method.method).c_str(), (unsigned long long)r.seed,
                  res.timing.total, family(m));
      if (r.method.method == decode::Method::Cspd) {
        std::printf("; acceptance %.2f, %.2f tokens a round", res.acceptance(),
                    res.tokens_per_round());
      }
      std::printf(")\n");
    }
  }
  return 0;
}

}  // namespace

int generate_continuous(const Args& a, const std::string& dir, const std::string& prompt,
                        uint64_t seed, int64_t count, int64_t scale) {
  if (model::is_mar_dir(dir))
    return generate_vectors(a, model::load_mar_dir(dir, true, a.str("dtype")), prompt, seed, count,
                            scale);
  return generate_vectors(a, model::load_continuous_dir(dir), prompt, seed, count, scale);
}

}  // namespace adtree::cli
