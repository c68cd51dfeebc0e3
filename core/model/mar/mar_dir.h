// A MAR model directory (issue "MAR checkpoints"), written by `adtree convert --mar` or
// `adtree model random --family mar`:
//   model.json        "family": "mar", "format": "adtree-mar"; "mar" (MarConfig), "vae"
//                     (Kl16Config), "draft" (a smaller MAR on the same VAE, for CSpD; optional),
//                     "sampling" (num_iter, cfg, cfg_schedule, temperature), card fields and
//                     provenance (each source file with its SHA-256)
//   mar.safetensors   the backbone in MAR's names and the head under "head."
//   draft.safetensors the same for the draft (optional)
//   vae.safetensors   the KL-16 decoder
//   text.json         the class names
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "model/conditioning.h"
#include "model/continuous/diffusion_head.h"
#include "model/continuous/diffusion_schedule.h"
#include "model/mar/kl16_decoder.h"
#include "model/mar/mar_backbone.h"
#include "model/mar/mar_import.h"

namespace adtree::model {

// One MAR: backbone, head and schedule.
struct MarModel {
  std::unique_ptr<MarBackbone> backbone;
  std::unique_ptr<DiffusionHead> head;
  DiffusionSchedule schedule;
  bool bf16 = false;  // the products run in bf16 (the backbone's panels and the lean head's)
};

struct MarBundle {
  std::string dir;
  nlohmann::json manifest;
  MarModel target, draft;  // draft.backbone null when the directory has none
  std::unique_ptr<Kl16Decoder> vae;
  Vocabulary classes;

  bool has_draft() const { return draft.backbone != nullptr; }
  // tokens [N, D] -> uint8 [H, W, 3] (MAR's (x + 1) / 2, clamped).
  at::Tensor picture(const at::Tensor& tokens) const;
};

bool is_mar_dir(const std::string& dir);
// Every tensor's name, shape and finiteness checked; an adtree::Error names the file. `dtype`:
// "fp32" packs the backbones for the lean CPU path ($ADTREE_LEAN=0: libtorch's products, the
// reference), "bf16" packs them in bf16 (model/mar/mar_backbone.h, pack); "fp16" is refused (a GPU
// precision). The KL-16 decoder stays on libtorch in fp32.
MarBundle load_mar_dir(const std::string& dir, bool load_draft = true,
                       const std::string& dtype = "fp32");

struct MarDirParts {
  MarImport target;
  std::unique_ptr<MarImport> draft;  // optional
  Kl16Import vae;
  std::vector<std::string> classes;
  std::string name, description, dtype = "";  // dtype "": as given; "fp32", "bf16", "fp16"
  nlohmann::json provenance = nlohmann::json::object();
};
// Writes into a fresh folder beside `out` and renames it at the end, so a failure leaves nothing.
void write_mar_dir(const MarDirParts& parts, const std::string& out);

}  // namespace adtree::model
