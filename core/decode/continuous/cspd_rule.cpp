#include "decode/continuous/cspd_rule.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace adtree::decode {

double aligned_log_scale(const std::vector<double>& log_std_draft,
                         const std::vector<double>& log_std_target) {
  if (log_std_draft.size() != log_std_target.size()) {
    throw Error("CSpD: the draft's and the target's trajectories differ in length");
  }
  double s = 0.0;  // in log space: 16 dimensions x 100 steps of ratios overflow a double
  for (size_t i = 0; i < log_std_draft.size(); ++i) s += log_std_draft[i] - log_std_target[i];
  return s;
}

CspdVerdict cspd_residual(const TokenDensity& p_last, const TokenDensity& q_last, double log_s,
                          Rng& rng, int max_tries) {
  CspdVerdict v;
  for (v.tries = 1; v.tries <= max_tries; ++v.tries) {
    v.token = p_last.sample(rng);
    // (S p - q)+ / (S p) = max(0, 1 - q / (S p)), in log space
    const double keep = 1.0 - std::exp(q_last.log_pdf(v.token) - log_s - p_last.log_pdf(v.token));
    if (rng.uniform() < keep) return v;
  }
  v.tries = max_tries;
  v.exhausted = true;  // the residual's mass is tiny: the target's own sample stands in
  return v;
}

CspdVerdict cspd_verify(const Token& x0, const TokenDensity& p_last, const TokenDensity& q_last,
                        double log_s, Rng& rng, int max_tries) {
  return cspd_verify_relaxed(x0, p_last, q_last, p_last, q_last, log_s, rng, max_tries);
}

CspdVerdict cspd_verify_relaxed(const Token& x0, const TokenDensity& p_test,
                                const TokenDensity& q_test, const TokenDensity& p_last,
                                const TokenDensity& q_last, double log_s, Rng& rng, int max_tries) {
  const double log_r = log_s + p_test.log_pdf(x0) - q_test.log_pdf(x0);
  const double u = rng.uniform();
  if (std::log(u) < std::min(0.0, log_r)) {
    CspdVerdict v;
    v.accepted = true;
    v.token = x0;
    v.log_ratio = log_r;
    return v;
  }
  auto v = cspd_residual(p_last, q_last, log_s, rng, max_tries);
  v.log_ratio = log_r;
  return v;
}

}  // namespace adtree::decode
