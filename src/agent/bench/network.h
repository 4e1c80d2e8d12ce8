// The network throughput benchmark of the provider agent (SPEC BEN-4): how fast this
// machine moves data to and from the platform, over HTTP/1.1 to gpunexd's benchmark
// endpoints (docs/benchmarks-network-storage.md), authenticated with the agent token.
//
//   download: GET  <base_url>/api/v1/agent/bench/download?bytes=N, the body discarded as
//             it arrives;
//   upload:   POST <base_url>/api/v1/agent/bench/upload with Expect: 100-continue, a
//             chunked body of N bytes written onto the connection straight from one
//             framed 1 MiB chunk (libcurl opens the connection, CURLOPT_CONNECT_ONLY);
//             gpunexd answers how many bytes it read.
// Each direction stops early after max_seconds and is computed from what was moved.
// The time runs from the first body byte to the last (download: the bytes after the
// first piece received, over the time from its arrival to the last one's; upload: from
// when the first piece is handed to the connection to the platform's answer, so every
// byte counted has arrived). Units: Mbit/s = 1e6 bits per second.
//
// The connection is made as the agent's channel makes it (common/net/endpoint.h): through the
// proxy given, else the one the environment names (HTTPS_PROXY for https, HTTP_PROXY for
// http, honouring NO_PROXY), always as a CONNECT tunnel; TLS verified against ca_file or
// the system store.
//
// Thread-safety: RunNetworkThroughput may be called from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace gpunex::agent::bench {

struct NetworkOptions {
  std::string
      base_url;       // the platform's URL, e.g. https://platform.example or http://127.0.0.1:8080
  std::string token;  // agent token
  int64_t bytes = 256LL << 20;  // per direction; 1 byte to 1 GiB
  double max_seconds = 20;  // per direction, (0, 600]; stop early and compute from what was moved
  std::string ca_file;      // extra CA for a private platform certificate ("" = system)
  std::string proxy;        // "" = from the environment; otherwise "http://[user:pass@]host[:port]"
};

struct NetworkResult {
  double download_mbit_s = 0, upload_mbit_s = 0;
  int64_t download_bytes = 0, upload_bytes = 0;  // what was moved
};

// Measures the download, then the upload.
// Fails with kInvalidArgument for out-of-range options or a malformed URL; with
// kUnauthenticated (401: a bad or revoked token) or kPermissionDenied (403); with
// kResourceExhausted when the platform is already running this token's maximum of
// transfers (429); with kFailedPrecondition for another 4xx (e.g. a platform without the
// endpoints); with kUnavailable for anything transient (connection, TLS, proxy, 5xx,
// a transfer cut short). Messages carry the platform's error message when there is one.
StatusOr<NetworkResult> RunNetworkThroughput(const NetworkOptions& o);

}  // namespace gpunex::agent::bench
