// Writing a whole file and knowing it arrived: every output the tools write (statistics, bench
// and soak reports, encoded images, manifests) goes through here, so a full disk, a read-only
// folder or a vanished directory is an adtree::Error naming the file and the system's reason,
// never a silently truncated file and a zero exit status.
#pragma once
#include <string>

namespace adtree::io {

// Writes `bytes` to `path` (truncating), flushes and closes it, and checks every step.
// `what` names the content for the message ("the statistics file").
void write_file(const std::string& path, const std::string& bytes, const std::string& what);

}  // namespace adtree::io
