// A model's identity for the settings a picture carries: the SHA-256 of the files that make it
// (OpenSSL's libcrypto). Lets a user tell, years later, whether a picture came from the very
// weights on disk now or from a retrained model of the same name.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace adtree::io {

// False when this build has no libcrypto (a GPU box with only libtorch): hashes come back empty.
bool have_sha256();

// SHA-256 over the named files in the given order, each preceded by its file name and size, as
// "sha256:<64 hex digits>". Files that do not exist are skipped (a model without a draft head).
// Throws adtree::Error naming a file that exists but cannot be read.
std::string sha256_files(const std::vector<std::string>& paths);

// The SHA-256 of one whole file's bytes, 64 hex digits (what sha256sum prints); empty without
// libcrypto. Throws adtree::Error when the file is missing or unreadable.
std::string sha256_file(const std::string& path);

// The same hash, remembered across runs in $XDG_CACHE_HOME/adtree-studio/model-hashes.json
// (~/.cache/...) under the files' paths, sizes and modification times, as make and ccache trust
// them: a multi-GB checkpoint is read once, not at every load. A cache that cannot be read or
// written is ignored (the hash is computed).
// `progress`, when given, hears the fraction of the bytes hashed (only when they are hashed).
std::string sha256_files_cached(const std::vector<std::string>& paths,
                                const std::function<void(double)>& progress = {});

}  // namespace adtree::io
