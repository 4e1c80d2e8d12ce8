#include "agent/bench/bench_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "agent/bench/network.h"
#include "agent/bench/storage.h"
#include "common/json.h"

namespace gpunex::agent::bench {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

int Failed(std::ostream& err, const std::string& what, const Status& st) {
  err << "gpunex-agent bench " << what << ": " << st.ToString() << "\n";
  return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

int Storage(const StorageOptions& o, bool as_json, std::ostream& out, std::ostream& err) {
  auto r = RunStorageBenchmark(o);
  if (!r.ok()) return Failed(err, "storage", r.status());
  if (as_json) {
    out << ToJsonText(json::object{{"seq_write_mb_s", r->seq_write_mb_s},
                                   {"seq_read_mb_s", r->seq_read_mb_s},
                                   {"rand_read_iops", r->rand_read_iops},
                                   {"rand_read_p50_us", r->rand_read_p50_us},
                                   {"rand_read_p99_us", r->rand_read_p99_us},
                                   {"queue_depth", o.queue_depth},
                                   {"file_bytes", r->file_bytes},
                                   {"direct_io", r->direct_io},
                                   {"io_uring", r->io_uring}})
        << "\n";
    return 0;
  }
  out << "storage in " << o.dir << ": " << (r->file_bytes >> 20) << " MiB test file, "
      << (r->direct_io ? "O_DIRECT"
                       : "BUFFERED I/O (the file system refused O_DIRECT; caches dropped)")
      << "\n"
      << "  sequential write  " << Fixed(r->seq_write_mb_s, 1)
      << " MB/s (1 MiB blocks, fsync included)\n"
      << "  sequential read   " << Fixed(r->seq_read_mb_s, 1) << " MB/s (1 MiB blocks)\n"
      << "  random read       " << Fixed(r->rand_read_iops, 0) << " IOPS (4 KiB, queue depth "
      << o.queue_depth << ", " << (r->io_uring ? "io_uring" : "threads: io_uring refused") << ")\n"
      << "  latency           p50 " << Fixed(r->rand_read_p50_us, 1) << " us, p99 "
      << Fixed(r->rand_read_p99_us, 1) << " us\n";
  return 0;
}

int Network(const NetworkOptions& o, bool as_json, std::ostream& out, std::ostream& err) {
  auto r = RunNetworkThroughput(o);
  if (!r.ok()) return Failed(err, "network", r.status());
  if (as_json) {
    out << ToJsonText(json::object{{"download_mbit_s", r->download_mbit_s},
                                   {"upload_mbit_s", r->upload_mbit_s},
                                   {"download_bytes", r->download_bytes},
                                   {"upload_bytes", r->upload_bytes}})
        << "\n";
    return 0;
  }
  out << "network to " << o.base_url << "\n"
      << "  download  " << Fixed(r->download_mbit_s, 1) << " Mbit/s (" << (r->download_bytes >> 20)
      << " MiB)\n"
      << "  upload    " << Fixed(r->upload_mbit_s, 1) << " Mbit/s (" << (r->upload_bytes >> 20)
      << " MiB)\n";
  return 0;
}

}  // namespace

int RunBenchCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"measure this machine's storage, or its network to the platform",
               "gpunex-agent bench"};
  app.require_subcommand(1);
  bool as_json = false;

  StorageOptions so;
  int64_t file_mb = so.file_bytes >> 20, keep_free_mb = so.keep_free_bytes >> 20;
  auto* storage =
      app.add_subcommand("storage", "sequential and random I/O on a test file in a directory");
  storage->add_option("--dir", so.dir, "directory to measure (the agent's work area)")->required();
  storage->add_option("--file-mb", file_mb, "test file size, MiB")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  storage->add_option("--seconds", so.seconds_per_phase, "limit of each phase, seconds")
      ->capture_default_str();
  storage->add_option("--queue-depth", so.queue_depth, "random 4 KiB reads in flight")
      ->capture_default_str();
  storage->add_option("--keep-free-mb", keep_free_mb, "refuse to leave less free, MiB")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  storage->add_flag("--json", as_json, "print one JSON object");

  NetworkOptions no;
  no.base_url = Env("GPUNEX_PLATFORM_URL");
  no.token = Env("GPUNEX_TOKEN");
  no.ca_file = Env("GPUNEX_CA_FILE");
  int64_t mb = no.bytes >> 20;
  auto* network = app.add_subcommand("network", "download and upload throughput to the platform");
  network->add_option("--url", no.base_url, "platform URL (default: GPUNEX_PLATFORM_URL)");
  network->add_option("--token", no.token, "agent token (default: GPUNEX_TOKEN)");
  network->add_option("--mb", mb, "MiB per direction")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}))
      ->capture_default_str();
  network->add_option("--seconds", no.max_seconds, "limit per direction, seconds")
      ->capture_default_str();
  network->add_option("--ca-file", no.ca_file,
                      "PEM CA certificates to trust (default: GPUNEX_CA_FILE)");
  network->add_option("--proxy", no.proxy, "HTTP proxy (default: HTTPS_PROXY / HTTP_PROXY)");
  network->add_flag("--json", as_json, "print one JSON object");

  // CLI11 takes the words last first.
  std::vector<std::string> words(args.rbegin(), args.rend());
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;  // --help: 0
  }
  if (*storage) {
    so.file_bytes = file_mb << 20;
    so.keep_free_bytes = keep_free_mb << 20;
    return Storage(so, as_json, out, err);
  }
  no.bytes = mb << 20;
  return Network(no, as_json, out, err);
}

}  // namespace gpunex::agent::bench
