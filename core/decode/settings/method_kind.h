// The names of the decoding methods and their families, as types only: what the method settings
// (method.h) and the settings table (setting.h) need to say which method they are about. Everything
// said of a method (its key, label, help, whether a request is lossless, its map ranges) is its row
// in method_table.h.
#pragma once

namespace adtree::decode {

enum class Method { Ar, Static, Dynamic, Adt, Sjd, PathSpec, SjdPac, Pjd, Cspd };
enum class Family { Ar, Tree, Jacobi, Continuous };
// What a model's tokens are: codes of a VQ codebook (the LlamaGen family) or vectors (the
// continuous family, model/continuous). A method runs on one kind or, as AR, on both.
enum class TokenKind { Codes, Vectors };

}  // namespace adtree::decode
