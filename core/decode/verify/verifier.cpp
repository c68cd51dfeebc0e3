#include "decode/verify/verifier.h"

namespace adtree::decode {

namespace {

class CoupledVerifier : public Verifier {
 public:
  explicit CoupledVerifier(CouplingNoise& noise) : noise_(noise) {}
  AcceptResult verify(const DraftTree& tree, const at::Tensor& p, const at::Tensor&,
                      int64_t root_index, int64_t max_depth) override {
    return verify_coupled(tree, p, noise_, root_index, max_depth);
  }

 private:
  CouplingNoise& noise_;
};

class RejectionVerifier : public Verifier {
 public:
  RejectionVerifier(ChildRule rule, const LanternRule* lantern, Rng& rng)
      : rule_(rule), lantern_(lantern), rng_(rng) {}
  AcceptResult verify(const DraftTree& tree, const at::Tensor& p, const at::Tensor&, int64_t,
                      int64_t max_depth) override {
    return verify_tree(tree, p, rule_, lantern_, max_depth, rng_);
  }

 private:
  ChildRule rule_;
  const LanternRule* lantern_;
  Rng& rng_;
};

class CascadeVerifier : public Verifier {
 public:
  CascadeVerifier(ChildRule rule, const CascadeSettings& settings, Rng& rng)
      : rule_(rule), cascade_(settings), rng_(rng) {}
  AcceptResult verify(const DraftTree& tree, const at::Tensor& p, const at::Tensor& logits, int64_t,
                      int64_t max_depth) override {
    cascade_.begin(tree, logits, p);
    return verify_tree(tree, p, rule_, nullptr, max_depth, rng_, &cascade_);
  }

 private:
  ChildRule rule_;
  CascadeRule cascade_;
  Rng& rng_;
};

class JacobiVerifier : public Verifier {
 public:
  JacobiVerifier(JacobiState& state, const LanternRule* lantern, Rng& rng)
      : state_(state), lantern_(lantern), rng_(rng) {}
  AcceptResult verify(const DraftTree& tree, const at::Tensor& p, const at::Tensor&, int64_t,
                      int64_t max_depth) override {
    return state_.accept(tree, p, lantern_, max_depth, rng_);
  }

 private:
  JacobiState& state_;
  const LanternRule* lantern_;
  Rng& rng_;
};

}  // namespace

std::unique_ptr<Verifier> make_coupled_verifier(CouplingNoise& noise) {
  return std::make_unique<CoupledVerifier>(noise);
}
std::unique_ptr<Verifier> make_rejection_verifier(ChildRule rule, const LanternRule* lantern,
                                                  Rng& rng) {
  return std::make_unique<RejectionVerifier>(rule, lantern, rng);
}
std::unique_ptr<Verifier> make_cascade_verifier(ChildRule rule, const CascadeSettings& settings,
                                                Rng& rng) {
  return std::make_unique<CascadeVerifier>(rule, settings, rng);
}
std::unique_ptr<Verifier> make_jacobi_verifier(JacobiState& state, const LanternRule* lantern,
                                               Rng& rng) {
  return std::make_unique<JacobiVerifier>(state, lantern, rng);
}

}  // namespace adtree::decode
