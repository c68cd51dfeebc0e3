// The SentencePiece plug-in: Debian's libsentencepiece behind the C interface of spm_c_api.h
// (why a plug-in: that header).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/text/spm/spm_c_api.h"

struct adtree_spm {
  sentencepiece::SentencePieceProcessor sp;
};

// Declared in SentencePiece's internal common.h, exported by libsentencepiece.so.
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}

namespace {
// Opened with RTLD_DEEPBIND, this library's std::cerr is libstdc++'s own object, which the program
// never initialises (the program's copy of it is the one constructed), so any SentencePiece log
// line would crash. Its messages are silenced; every failure is returned as a status instead.
void silence_logging() {
  sentencepiece::logging::SetMinLogLevel(4);  // above FATAL (3)
}

void set_error(char* err, size_t n, const std::string& what) {
  if (err == nullptr || n == 0) return;
  std::strncpy(err, what.c_str(), n - 1);
  err[n - 1] = '\0';
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) adtree_spm* adtree_spm_load(const char* path, char* err,
                                                                   size_t n) {
  silence_logging();
  auto* spm = new adtree_spm;
  const auto status = spm->sp.Load(path);
  if (!status.ok()) {
    set_error(err, n, status.ToString());
    delete spm;
    return nullptr;
  }
  return spm;
}

__attribute__((visibility("default"))) void adtree_spm_free(adtree_spm* spm) {
  delete spm;
}

__attribute__((visibility("default"))) long adtree_spm_encode(const adtree_spm* spm,
                                                              const char* text, size_t len,
                                                              int* ids, long cap, char* err,
                                                              size_t n) {
  std::vector<int> out;
  const auto status = spm->sp.Encode(std::string(text, len), &out);
  if (!status.ok()) {
    set_error(err, n, status.ToString());
    return -1;
  }
  for (size_t i = 0; i < out.size() && long(i) < cap; ++i) ids[i] = out[i];
  return long(out.size());
}

__attribute__((visibility("default"))) int adtree_spm_piece_size(const adtree_spm* spm) {
  return spm->sp.GetPieceSize();
}
__attribute__((visibility("default"))) int adtree_spm_eos_id(const adtree_spm* spm) {
  return spm->sp.eos_id();
}
__attribute__((visibility("default"))) int adtree_spm_pad_id(const adtree_spm* spm) {
  return spm->sp.pad_id();
}

__attribute__((visibility("default"))) int adtree_spm_train(const char* args, char* err, size_t n) {
  silence_logging();
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  if (!status.ok()) {
    set_error(err, n, status.ToString());
    return -1;
  }
  return 0;
}

}  // extern "C"
