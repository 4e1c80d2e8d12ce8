#include "platform/relay/cluster_store.h"

#include <chrono>

#include "common/ids.h"
#include "common/log.h"
#include "platform/relay/peer.h"

namespace gpunex::platform::relay {

namespace {

// An instance's row outlives its last heartbeat this long (its holdings with it), so that
// the table keeps only the recent past.
constexpr auto kForgetAfter = std::chrono::hours(1);

constexpr std::string_view kBearer = "Bearer ";

}  // namespace

std::string InstanceUrl(const ClusterOptions& options, std::string_view listen, bool tls) {
  if (!options.instance_url.empty()) return options.instance_url;
  const size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos) return "";
  const std::string_view host = listen.substr(0, colon);
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::") return "";
  return std::string(tls ? "https://" : "http://") + std::string(listen);
}

Cluster::Cluster(store::Database& db, const Clock& clock, ClusterOptions options,
                 std::string instance_url)
    : db_(db),
      clock_(clock),
      options_(std::move(options)),
      id_(NewId("ins")),
      url_(std::move(instance_url)),
      secret_(NewSecret("gpx_i")) {}

Cluster::~Cluster() {
  if (registered_) Leave();
}

Status Cluster::InsertRow(store::Tx& tx, int64_t now) {
  return tx
      .Exec(
          "INSERT INTO cluster_instances (id, url, secret_hash, started_at, seen_at) "
          "VALUES (?, ?, ?, ?, ?)",
          {id_, url_, Sha256Hex(secret_), now, now})
      .status();
}

Status Cluster::Register() {
  const int64_t now = ToUnixMicros(clock_.Now());
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) { return InsertRow(tx, now); }));
  registered_ = true;
  LogInfo("cluster.registered", {{"instance_id", id_}, {"url", url_}});
  return Status::Ok();
}

StatusOr<bool> Cluster::Heartbeat(const std::vector<std::string>* held) {
  const Timestamp now = clock_.Now();
  bool again = false;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        int64_t seen,
        tx.Exec("UPDATE cluster_instances SET seen_at = ? WHERE id = ?", {ToUnixMicros(now), id_}));
    again = seen == 0;
    if (again) GPUNEX_RETURN_IF_ERROR(InsertRow(tx, ToUnixMicros(now)));
    if (held == nullptr) return Status::Ok();
    for (const std::string& machine : *held) {
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO relay_holders (machine_id, instance_id, since) VALUES (?, ?, ?) "
                  "ON CONFLICT (machine_id) DO UPDATE SET instance_id = excluded.instance_id, "
                  "since = excluded.since WHERE relay_holders.instance_id <> excluded.instance_id",
                  {machine, id_, ToUnixMicros(now)})
              .status());
    }
    const int64_t forget = ToUnixMicros(now - kForgetAfter);
    GPUNEX_RETURN_IF_ERROR(tx.Exec("DELETE FROM relay_holders WHERE instance_id IN "
                                   "(SELECT id FROM cluster_instances WHERE seen_at < ?)",
                                   {forget})
                               .status());
    return tx.Exec("DELETE FROM cluster_instances WHERE seen_at < ?", {forget}).status();
  }));
  if (again) LogWarn("cluster.registered_again", {{"instance_id", id_}});
  return again;
}

void Cluster::Holding(const std::string& machine_id, bool held) {
  const int64_t now = ToUnixMicros(clock_.Now());
  Status st = db_.Transact([&](store::Tx& tx) {
    if (held) {
      return tx
          .Exec(
              "INSERT INTO relay_holders (machine_id, instance_id, since) VALUES (?, ?, ?) "
              "ON CONFLICT (machine_id) DO UPDATE SET instance_id = excluded.instance_id, "
              "since = excluded.since",
              {machine_id, id_, now})
          .status();
    }
    // Only this instance's record: the agent may be held by another already.
    return tx
        .Exec("DELETE FROM relay_holders WHERE machine_id = ? AND instance_id = ?",
              {machine_id, id_})
        .status();
  });
  if (!st.ok()) {
    LogWarn("cluster.holding_failed",
            {{"machine_id", machine_id}, {"held", held}, {"error", st.ToString()}});
  }
}

StatusOr<std::optional<PeerRoute>> Cluster::Route(const std::string& machine_id) {
  const int64_t live_since =
      ToUnixMicros(clock_.Now() - std::chrono::seconds(options_.stale_after_s));
  std::optional<PeerRoute> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query("SELECT i.id, i.url FROM relay_holders h JOIN cluster_instances i "
                 "ON i.id = h.instance_id WHERE h.machine_id = ? AND i.id <> ? AND i.seen_at >= ?",
                 {machine_id, id_, live_since}));
    if (rows.empty()) return Status::Ok();
    out = PeerRoute{.instance_id = rows[0]["id"].Str(),
                    .url = rows[0]["url"].Str() + std::string(kPeerPath),
                    .authorization = std::string(kBearer) + id_ + "." + secret_,
                    .ca_file = options_.ca_file};
    return Status::Ok();
  }));
  return out;
}

bool Cluster::Verify(std::string_view authorization) {
  if (!authorization.starts_with(kBearer)) return false;
  const std::string_view token = authorization.substr(kBearer.size());
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 64) return false;
  const std::string instance(token.substr(0, dot));
  const std::string hash = Sha256Hex(token.substr(dot + 1));
  const int64_t live_since =
      ToUnixMicros(clock_.Now() - std::chrono::seconds(options_.stale_after_s));
  bool ok = false;
  Status st = db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query("SELECT secret_hash FROM cluster_instances WHERE id = ? AND seen_at >= ?",
                 {instance, live_since}));
    ok = !rows.empty() && ConstantTimeEquals(rows[0]["secret_hash"].Str(), hash);
    return Status::Ok();
  });
  if (!st.ok()) LogWarn("cluster.verify_failed", {{"error", st.ToString()}});
  return st.ok() && ok;
}

void Cluster::Leave() {
  Status st = db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("DELETE FROM relay_holders WHERE instance_id = ?", {id_}).status());
    return tx.Exec("DELETE FROM cluster_instances WHERE id = ?", {id_}).status();
  });
  if (!st.ok()) LogWarn("cluster.leave_failed", {{"error", st.ToString()}});
}

std::vector<store::Migration> ClusterMigrations() {
  return {
      {24,
       "relay",
       "relay: the instances of a cluster and the data channels each holds",
       {
           R"(CREATE TABLE cluster_instances (
                id TEXT PRIMARY KEY,
                url TEXT NOT NULL,
                secret_hash TEXT NOT NULL,
                started_at BIGINT NOT NULL,
                seen_at BIGINT NOT NULL))",
           R"(CREATE TABLE relay_holders (
                machine_id TEXT PRIMARY KEY,
                instance_id TEXT NOT NULL,
                since BIGINT NOT NULL))",
           "CREATE INDEX relay_holders_instance ON relay_holders (instance_id)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::relay
