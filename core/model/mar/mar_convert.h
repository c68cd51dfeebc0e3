// `adtree convert --mar` (issue "MAR checkpoints"): LTH14/mar's checkpoint-last.pth (and a smaller
// one as CSpD's draft) with its kl16.ckpt -> a MAR model directory (mar_dir.h), read without
// Python, each source recorded with its SHA-256.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace adtree::model {

struct MarConvertRequest {
  std::string mar, vae, draft, out;    // draft: optional
  int64_t heads = 0, draft_heads = 0;  // 0: from each checkpoint's saved model name
  std::string classes;                 // a class-name file; "": the shipped ImageNet list
  std::string dtype;                   // "": as stored; fp32, bf16, fp16
  std::string name;                    // "": the out folder's name
  bool force = false;                  // replace an existing directory
};

struct MarConvertResult {
  std::vector<std::string> summary, warnings;
};

MarConvertResult convert_mar(const MarConvertRequest& r);

}  // namespace adtree::model
