#include "decode/run.h"

#include "util/error.h"

namespace adtree::decode {

DecodeResult run_decode(const model::ModelBundle& model, const model::Condition& cond,
                        const DecodeRequest& request, const StepCallback& on_step,
                        const std::atomic<bool>* cancel) {
  const auto& g = model.gpt_config;
  request.method.validate(g.vocab_size, g.image_tokens());
  request.sampling.validate(g.vocab_size);
  DecodeResult res;
  if (request.method.method == "ar") {
    res = generate_ar(*model.gpt, cond, request.sampling, request.seed, on_step, cancel);
  } else {
    throw Error("method '" + request.method.method + "' is not available in this build yet");
  }
  res.stats.settings["method_settings"] = request.method.to_json();
  return res;
}

}  // namespace adtree::decode
