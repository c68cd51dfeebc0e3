// adtree convert: a released LlamaGen checkpoint -> a model directory, without Python
// (model/llamagen/llamagen_convert.h): .safetensors state dicts and torch.save() files (.pt,
// .pth, .bin), read by a restricted unpickler that never runs code. tools/convert_llamagen.py
// does the same with Python's torch.
#include <iostream>

#include "commands.h"
#include "model/llamagen/llamagen_convert.h"
#include "model/mar/mar_convert.h"
#include "model/text/t5_convert.h"
#include "terminal_progress.h"
#include "util/error.h"

namespace adtree::cli {

namespace {

void declare_options(Args& a) {
  a.option("gpt", "FILE", "GPT checkpoint (c2i_*.pt, t2i_*.pt or a .safetensors state dict)")
      .option("vq", "FILE", "VQ tokenizer checkpoint (vq_ds16_c2i.pt, ...)")
      .option("drafter", "FILE",
              "EAGLE-1 drafter (LANTERN's pytorch_model.bin, or the app's names)")
      .option("t5", "DIR",
              "instead: a T5 directory with pytorch_model*.bin -> its model.safetensors")
      .option("mar", "FILE",
              "instead: a MAR checkpoint (LTH14/mar checkpoint-last.pth; its model_ema) -> a MAR "
              "model directory (docs/mar.md)")
      .option("kl16", "FILE", "with --mar: MAR's KL-16 VAE (kl16.ckpt)")
      .option("mar-draft", "FILE", "with --mar: a smaller MAR on the same VAE, CSpD's draft", "")
      .option("draft-heads", "N",
              "with --mar-draft: its attention heads (default: its saved model)", "0")
      .option("out", "DIR", "model directory to create")
      .option("model", "NAME", "LlamaGen model name, for heads and image size (c2i_L_256)", "")
      .option("n-head", "N",
              "attention heads (overrides --model; for --mar: overrides its saved model name)", "0")
      .option("image-size", "PX", "image size in pixels (overrides --model)", "0")
      .option("grid", "N", "token grid side (overrides the image size)", "0")
      .option("classes", "FILE", "class names for c2i (default: the shipped ImageNet list)", "")
      .option("dtype", "T", "cast floating weights to fp32, bf16 or fp16 (default: as stored)", "")
      .option("drafter-norm-eps", "E", "RMSNorm eps of a drafter with the app's names", "1e-5")
      .option("name", "TEXT", "model name in model.json (default: --model, else the out folder's)",
              "");
  a.flag("force", "replace an existing output directory");
  a.flag("quiet", "no progress line on the terminal");
}

int convert_mar(const Args& a) {
  if (a.given("gpt") || a.given("vq") || a.given("drafter"))
    throw Error("--mar converts a MAR checkpoint: no --gpt, --vq or --drafter");
  model::MarConvertRequest r;
  r.mar = a.str("mar"), r.vae = a.given("kl16") ? a.str("kl16") : "", r.out = a.str("out");
  r.draft = a.str("mar-draft"), r.classes = a.str("classes"), r.dtype = a.str("dtype");
  r.name = a.str("name"), r.force = a.flag_set("force");
  r.heads = a.integer("n-head"), r.draft_heads = a.integer("draft-heads");
  if (r.heads < 0 || r.draft_heads < 0) throw Error("--n-head and --draft-heads must be positive");
  const auto res = model::convert_mar(r);
  for (const auto& w : res.warnings) std::cerr << "adtree convert: warning: " << w << "\n";
  for (const auto& line : res.summary) std::cout << line << "\n";
  return 0;
}

}  // namespace

int cmd_convert(int argc, char** argv) {
  Args a("convert",
         "Convert a released LlamaGen checkpoint (GPT, VQ, LANTERN drafter), or a MAR one with "
         "its KL-16 VAE (--mar), into a model directory.\nReads .safetensors state dicts and "
         "torch.save() files (.pt, .pth, .bin) "
         "without Python; Python objects in them are never run (docs/llamagen.md).");
  declare_options(a);
  if (!a.parse(argc, argv)) return 0;
  if (a.given("t5")) {
    if (a.given("gpt") || a.given("out"))
      throw Error("--t5 converts a T5 directory in place: no --gpt or --out");
    TerminalProgress bar("converting", a.flag_set("quiet"));
    const auto line =
        model::convert_t5_dir(a.str("t5"), a.str("dtype"),
                              [&bar](const std::string& stage, double f) { bar.update(stage, f); });
    std::cout << line << "\n";
    return 0;
  }
  if (a.given("mar")) return convert_mar(a);
  model::ConvertRequest r;
  r.gpt = a.str("gpt"), r.vq = a.str("vq"), r.drafter = a.str("drafter"), r.out = a.str("out");
  r.model = a.str("model"), r.classes = a.str("classes"), r.dtype = a.str("dtype");
  r.name = a.str("name");
  r.n_head = a.integer("n-head"), r.image_size = a.integer("image-size");
  r.grid = a.integer("grid");
  if (r.n_head < 0 || r.image_size < 0 || r.grid < 0) {
    throw Error("--n-head, --image-size and --grid must be positive");
  }
  r.drafter_norm_eps = a.number("drafter-norm-eps");
  r.force = a.flag_set("force");
  model::ConvertResult res;
  {
    TerminalProgress bar("converting", a.flag_set("quiet"));
    res = model::convert_llamagen(
        r, [&bar](const std::string& stage, double f) { bar.update(stage, f); });
  }
  for (const auto& w : res.warnings) std::cerr << "adtree convert: warning: " << w << "\n";
  for (const auto& line : res.summary) std::cout << line << "\n";
  return 0;
}

}  // namespace adtree::cli
