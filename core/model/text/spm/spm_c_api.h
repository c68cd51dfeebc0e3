// The C interface of the SentencePiece plug-in (spm_plugin.cpp), which the T5 tokenizer opens at
// run time (model/text/t5_tokenizer.cpp). Why a plug-in: Debian's libsentencepiece carries its own
// copy of protobuf-lite 3.14, and libtorch brings protobuf 3.21; linked into one program the two
// versions' symbols collide and the program aborts before main. Opened with dlopen(RTLD_LOCAL |
// RTLD_DEEPBIND), the library and its protobuf see only each other, and the program never sees
// them. Plain C types only, so nothing of either protobuf crosses this line.
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct adtree_spm adtree_spm;

// Loads a SentencePiece model file; null on failure, with the reason in err[0 .. n).
adtree_spm* adtree_spm_load(const char* path, char* err, size_t n);
void adtree_spm_free(adtree_spm* spm);

// The ids of `text` [0, len): their count, written to ids[0 .. min(count, cap)) (call again with a
// larger buffer when count > cap), or -1 with the reason in err.
long adtree_spm_encode(const adtree_spm* spm, const char* text, size_t len, int* ids, long cap,
                       char* err, size_t n);

int adtree_spm_piece_size(const adtree_spm* spm);
int adtree_spm_eos_id(const adtree_spm* spm);
int adtree_spm_pad_id(const adtree_spm* spm);

// Trains a SentencePiece model with SentencePieceTrainer's command-line arguments ("--input=...
// --model_prefix=... --vocab_size=..."): 0, or -1 with the reason in err. For the tiny T5 that
// `adtree model random` writes; a real model's spiece.model comes with its checkpoint.
int adtree_spm_train(const char* args, char* err, size_t n);

#ifdef __cplusplus
}
#endif
