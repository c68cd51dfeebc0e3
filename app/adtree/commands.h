// One function per verb of the `adtree` tool; each lives in its own cmd_*.cpp file.
#pragma once
#include <string>

#include "cli_args.h"
#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/settings/setting.h"
#include "model/model_dir.h"

namespace adtree::cli {

int cmd_generate(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_model(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_bench_picture(int argc, char** argv);
int cmd_data(int argc, char** argv);
int cmd_train(int argc, char** argv);
// adtree train vae|continuous (cmd_train_continuous.cpp), dispatched by cmd_train.
int cmd_train_continuous(const std::string& stage, int argc, char** argv);
// adtree train fidelity on a continuous model (its parsed options; cmd_train_continuous.cpp).
int continuous_fidelity_cmd(const Args& a);
int cmd_soak(int argc, char** argv);
int cmd_sweep(int argc, char** argv);
int cmd_convert(int argc, char** argv);

// Shared option groups, so every verb spells them the same way.
void add_model_options(Args& a);                 // --model --device --dtype --vq-dtype
model::LoadOptions load_options(const Args& a);  // from --device --dtype --vq-dtype
// A flag per entry of the settings table in `scope` (decode/settings/setting.h), or for one entry.
void add_setting_options(Args& a, decode::Scope scope);
void add_setting_option(Args& a, const std::string& key);
void add_sampling_options(Args& a);  // --cfg --cfg-schedule --cfg-interval --temperature ...
// --method and every tree / ADT / LANTERN setting (list: --method takes a comma list).
void add_method_options(Args& a, bool list = false);
decode::MethodSettings method_from(const Args& a, const std::string& method);
// --method when given; else its default (adt), or ar for a model without a draft head.
std::string method_or_default(const Args& a, bool has_drafter);
// The sampling and method flags given on the command line, over what `r` holds.
void apply_given_settings(const Args& a, decode::DecodeRequest& r);
// "flag=value" of a method setting (its command-line flag without the dashes) onto `r`: a bench
// entry's own settings, "adt@adt-leftover=0" or "cspd@cspd-gamma=2".
void apply_method_flag(const std::string& text, decode::DecodeRequest& r);
// The directory --model names, else the default model's (no loading).
std::string model_dir_arg(const Args& a);
// With --count N the files are numbered by seed: out.png -> out-<seed>.png.
std::string numbered(const std::string& path, uint64_t seed, int64_t count);
// adtree generate on a vector-token model directory, continuous family or MAR
// (generate_continuous.cpp).
int generate_continuous(const Args& a, const std::string& dir, const std::string& prompt,
                        uint64_t seed, int64_t count, int64_t scale);
// adtree bench on a vector-token model directory, continuous or MAR (bench/bench_continuous.cpp).
int bench_continuous(const Args& a, const std::string& dir);
// The model of --model, else `fallback_dir` when not empty, else the default model.
model::ModelBundle load_model(const Args& a, bool load_vq = true,
                              const std::string& fallback_dir = {});
// The model's defaults (model.json "sampling"), overridden by the options given.
decode::SamplingParams sampling_from(const Args& a, const model::ModelBundle& m);
// $ADTREE_MODEL, else the shipped model in the source tree or the install prefix.
std::string default_model_dir();

}  // namespace adtree::cli
