// The bad-settings tests' one question: what does validation say about these method settings?
#pragma once
#include <string>

#include "decode/settings/method.h"
#include "util/error.h"

namespace adtree::testing {

// The message MethodSettings::validate throws, or "" when the settings pass.
inline std::string validation_error(const decode::MethodSettings& m, int64_t vocab,
                                    int64_t image_tokens) {
  try {
    m.validate(vocab, image_tokens);
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace adtree::testing
