#include "bench_dtype.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "decode/ar_sampler.h"
#include "io/file_write.h"
#include "model/prompt_condition.h"
#include "util/error.h"

namespace adtree::cli {

namespace {
// The CFG-mixed logits [n, vocab] of every image position of `tokens` (teacher-forced): the
// prefill's last row predicts token 0, the block of tokens 0 .. n-2 the rest.
at::Tensor mixed_logits(const model::Gpt& gpt, const model::Condition& cond,
                        const std::vector<int64_t>& tokens, const decode::SamplingParams& sp) {
  c10::InferenceMode guard;
  const int64_t B = cond.batch(), n = int64_t(tokens.size());
  auto cache = gpt.new_cache(B);
  const auto first = gpt.prefill(cache, cond).logits;  // [B, 1, V]
  auto ids = at::tensor(tokens, at::TensorOptions().dtype(at::kLong)).narrow(0, 0, n - 1);
  const auto rest = gpt.forward_tokens(cache, ids.unsqueeze(0).expand({B, n - 1}), 0).logits;
  const auto all = at::cat({first, rest}, 1).to(at::kCPU, at::kFloat);  // [B, n, V]
  return B == 2 ? decode::cfg_mix(all[0], all[1], sp.cfg_scale) : all[0];
}

std::vector<std::string> prompts_of(const Args& a, const model::ModelBundle& m) {
  std::vector<std::string> out;
  std::stringstream ss(a.str("prompts"));
  for (std::string p; std::getline(ss, p, ';');) {
    if (!p.empty()) out.push_back(p);
  }
  if (out.empty() && m.vocab.size() > 1) out.push_back(m.vocab.entries()[1]);
  return out;
}
}  // namespace

void add_dtype_kl_option(Args& a) {
  a.flag("dtype-kl",
         "instead of timing: KL of the --dtype model's next-token distributions from the fp32 "
         "model's on pictures the fp32 model generates (--prompts, --seeds)");
}

int bench_dtype_kl(const Args& a) {
  if (a.str("dtype") == "fp32") throw Error("--dtype-kl compares a --dtype other than fp32");
  const std::string dir = a.given("model") ? a.str("model") : default_model_dir();
  model::LoadOptions lo;
  lo.device = a.str("device");
  lo.load_vq = false;
  const auto ref = model::load_model_dir(dir, lo);
  lo.dtype = a.str("dtype");
  const auto low = model::load_model_dir(dir, lo);
  const auto sp = sampling_from(a, ref);
  double kl_sum = 0, kl_max = 0, agree = 0, positions = 0;
  for (const auto& prompt : prompts_of(a, ref)) {
    const auto cond = model::condition_for_prompt(ref, prompt, sp.uses_cfg());
    for (int64_t seed = 0; seed < a.integer("seeds"); ++seed) {
      const auto tokens = decode::generate_ar(*ref.gpt, cond, sp, uint64_t(seed)).tokens;
      const auto p = mixed_logits(*ref.gpt, cond, tokens, sp).to(at::kDouble).log_softmax(-1);
      const auto q = mixed_logits(*low.gpt, cond, tokens, sp).to(at::kDouble).log_softmax(-1);
      const auto kl = (p.exp() * (p - q)).sum(-1);  // [n], nats
      kl_sum += kl.sum().item<double>();
      kl_max = std::max(kl_max, kl.max().item<double>());
      agree += p.argmax(-1).eq(q.argmax(-1)).sum().item<double>();
      positions += double(kl.numel());
    }
  }
  if (positions == 0) throw Error("--dtype-kl: no prompt to generate");
  nlohmann::json out = {{"model", dir},           {"dtype", a.str("dtype")},
                        {"reference", "fp32"},    {"cfg_scale", sp.cfg_scale},
                        {"positions", positions}, {"kl_mean_nats", kl_sum / positions},
                        {"kl_max_nats", kl_max},  {"top1_agreement", agree / positions}};
  std::cout << std::setprecision(4) << "KL(fp32 || " << a.str("dtype")
            << ") over CFG-mixed next-token distributions, " << positions << " positions: mean "
            << kl_sum / positions << " nats, max " << kl_max << " nats; top-1 agreement "
            << 100.0 * agree / positions << "%\n";
  if (a.given("json")) io::write_file(a.str("json"), out.dump(2) + "\n", "the results");
  return 0;
}

}  // namespace adtree::cli
