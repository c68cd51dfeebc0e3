// Fuzzes saved runs: a statistics JSON (`adtree generate --stats --trace`) or a studio run file
// (*.adtrun.json) -> decode::RunStats::from_json (steps, grids, summary, step traces), then
// run_tokens_from_json and validate_run, the consistency checks the studio applies when it opens
// a run (ui/runs/run_record.cpp recordFromJson calls the same core functions). Run files are shared
// between people, so they are untrusted input: bad ones must be an adtree::Error (or a JSON parse
// error), never a crash, an overflow or an allocation out of proportion to the file.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "decode/stats/stats.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace adtree;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(data, data + size);
  } catch (const nlohmann::json::exception&) {
    return 0;  // not JSON: the studio says so
  }
  try {
    const auto stats = decode::RunStats::from_json(j);
    const auto tokens = decode::run_tokens_from_json(j);
    decode::validate_run(stats, tokens);
    // What the studio does with an accepted run: keeps it and writes it back out.
    (void)stats.to_json().dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (int64_t c = 0; c < int64_t(tokens.size()); ++c) (void)stats.grids.filled(c);
  } catch (const Error&) {
    // the expected answer to a bad run file
  }
  return 0;
}
