// The instances of a cluster (issue 28; docs/operations.md, "Streams across instances"):
// where several gpunexd share one PostgreSQL database, each registers itself (an id of its
// own for each start, the URL the other instances reach it at, the hash of a secret they
// must show) and the machines whose data channels it holds. A stream for a machine held by
// another instance goes there (relay.h, PeerRoute); that instance lets in only callers
// that show a live instance's secret.
//
// On SQLite one process serves the data directory (main.cc's lock): there is no cluster.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/relay/relay.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::relay {

// [cluster] in the configuration.
struct ClusterOptions {
  // The base URL the other instances reach this one at ("http://10.0.0.11:8080"); "" takes
  // it from [http] listen when that names an address (not 0.0.0.0 or [::]).
  std::string instance_url;
  // https: the CA certificates that sign the instances' certificates; "" the system's.
  std::string ca_file;
  // How often this instance says it is alive; an instance silent for stale_after_s is
  // taken for dead (its agents are reconnecting elsewhere).
  int64_t heartbeat_s = 2;
  int64_t stale_after_s = 10;
};

class Cluster {
 public:
  // Registers this instance under a new id (Register inserts its row). `instance_url`:
  // the base URL, decided (not empty).
  Cluster(store::Database& db, const Clock& clock, ClusterOptions options,
          std::string instance_url);
  // Leaves (Leave) when it registered.
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const std::string& id() const { return id_; }
  const std::string& url() const { return url_; }

  // Inserts this instance's row.
  Status Register();
  // Says this instance is alive. With `held` (the machines whose data channels are here),
  // also records them as held here and forgets instances silent for an hour: the rarer,
  // fuller beat. True when this instance's own row had been forgotten (its clock, or
  // another's, jumped) and was written again: the caller then records every machine it
  // holds at once.
  StatusOr<bool> Heartbeat(const std::vector<std::string>* held = nullptr);
  // Records that `machine_id`'s data channel arrived here (true) or left (false); a failure
  // is logged, and the next heartbeat records it again.
  void Holding(const std::string& machine_id, bool held);
  // The live instance, not this one, that holds `machine_id`'s data channel; nullopt when
  // none does.
  StatusOr<std::optional<PeerRoute>> Route(const std::string& machine_id);
  // Whether `authorization` ("Bearer <instance id>.<secret>") is a live instance's.
  bool Verify(std::string_view authorization);
  // Removes this instance's rows (a clean stop).
  void Leave();

 private:
  // This instance's row, seen `now` (unix microseconds).
  Status InsertRow(store::Tx& tx, int64_t now);

  store::Database& db_;
  const Clock& clock_;
  const ClusterOptions options_;
  const std::string id_;
  const std::string url_;
  const std::string secret_;  // shown to the others; only its hash is stored
  std::atomic<bool> registered_{false};
};

// The instance URL `options` and the server's settings give: options.instance_url, else
// http(s)://<listen> when listen names an address; "" when neither does.
std::string InstanceUrl(const ClusterOptions& options, std::string_view listen, bool tls);

std::vector<store::Migration> ClusterMigrations();

}  // namespace gpunex::platform::relay
