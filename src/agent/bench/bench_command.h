// `gpunex-agent bench`: the storage and network benchmarks run by hand, printing their
// figures (as text, or one JSON object with --json).
//
//   gpunex-agent bench storage --dir D [--file-mb N] [--seconds S] [--queue-depth Q]
//                              [--keep-free-mb M] [--json]
//   gpunex-agent bench network [--url BASE] [--token T] [--mb N] [--seconds S]
//                              [--ca-file F] [--proxy URL] [--json]
// The network command takes --url, --token and --ca-file from GPUNEX_PLATFORM_URL,
// GPUNEX_TOKEN and GPUNEX_CA_FILE when they are not given.
//
// Thread-safety: runs on the calling thread; prints to the streams given.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpunex::agent::bench {

// `args` are the words after "bench" ("storage", "--dir", "/x", ...). Returns the process
// exit status: 0 on success, 1 when the benchmark failed, 2 for a usage error.
int RunBenchCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpunex::agent::bench
