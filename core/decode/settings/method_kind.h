// The names of the decoding methods and their families, as types only: what the method settings
// (method.h) and the settings table (setting.h) need to say which method they are about. Everything
// said of a method (its key, label, help, whether a request is lossless, its map ranges) is its row
// in method_table.h.
#pragma once

namespace adtree::decode {

enum class Method { Ar, Static, Dynamic, Adt, Sjd, PathSpec, SjdPac, Pjd };
enum class Family { Ar, Tree, Jacobi };

}  // namespace adtree::decode
