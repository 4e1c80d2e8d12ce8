#include "platform/relay/relay_module.h"

#include "common/background.h"
#include "common/log.h"
#include "platform/http/metrics.h"
#include "platform/relay/cluster_store.h"
#include "platform/relay/traffic_store.h"
#include "platform/rentals/rentals.h"
#include "platform/store/db.h"

namespace gpunex::platform::relay {
namespace {

void CollectMetrics(const Services& s, http::Metrics& m) {
  const Relay* relay = s.Find<Relay>();
  if (!relay) return;
  const RelayFigures f = relay->Figures();
  m.SetGauge("gpunex_relay_channels", "Agents' data channels connected to this instance.",
             static_cast<double>(f.channels));
  m.SetGauge("gpunex_relay_streams", "Streams to rentals' ports open through this instance.",
             static_cast<double>(f.streams));
  m.SetGauge("gpunex_relay_peer_links",
             "Connections to other instances that carry streams to the agents they hold.",
             static_cast<double>(f.peer_links));
  m.SetGauge("gpunex_relay_bytes_to_agents", "Stream bytes relayed to agents since start.",
             static_cast<double>(f.bytes_to_agents));
  m.SetGauge("gpunex_relay_bytes_from_agents", "Stream bytes relayed from agents since start.",
             static_cast<double>(f.bytes_from_agents));
  for (const PortTraffic& t : f.ports) {
    for (const auto& [direction, bytes] : {std::pair{"in", t.in_bytes}, {"out", t.out_bytes}}) {
      m.SetGauge(
          "gpunex_rental_port_bytes",
          "Bytes a running rental's port moved through this instance since start "
          "(in: from its customer).",
          static_cast<double>(bytes),
          {{"rental_id", t.rental_id}, {"port", std::to_string(t.port)}, {"direction", direction}});
    }
  }
}

ConfigSection ClusterSection() {
  return ConfigSection{
      .name = "cluster",
      .parse = [](ConfigTable& t, const EnvGetter& env) -> StatusOr<std::any> {
        ClusterOptions o;
        GPUNEX_RETURN_IF_ERROR(t.Str("instance_url", &o.instance_url));
        // Each instance's own address: the one setting that differs between instances.
        if (auto v = env("GPUNEX_INSTANCE_URL")) o.instance_url = *v;
        GPUNEX_RETURN_IF_ERROR(t.Str("ca_file", &o.ca_file));
        GPUNEX_RETURN_IF_ERROR(t.Int("heartbeat_s", &o.heartbeat_s, 1, 60));
        GPUNEX_RETURN_IF_ERROR(t.Int("stale_after_s", &o.stale_after_s, 3, 600));
        if (!o.instance_url.empty()) {
          const std::string& u = o.instance_url;
          const bool scheme = u.starts_with("http://") || u.starts_with("https://");
          const size_t host = u.find("://") + 3;
          if (!scheme || u.size() == host || u.find('/', host) != std::string::npos ||
              u.find_first_of(" \t\r\n?#") != std::string::npos) {
            return FieldError("cluster.instance_url",
                              "must be http(s)://host[:port], with no path");
          }
        }
        if (o.stale_after_s < 2 * o.heartbeat_s) {
          return FieldError("cluster.stale_after_s", "must be at least twice heartbeat_s");
        }
        return std::any(o);
      },
      .example =
          R"([cluster]                        # several instances on one PostgreSQL; docs/operations.md
instance_url = ""                # how the other instances reach this one (GPUNEX_INSTANCE_URL); "" : from listen
ca_file = ""                     # https instance URLs: the CA that signs them; "" : the system's
heartbeat_s = 2                  # this instance says it is alive this often
stale_after_s = 10               # an instance silent this long is taken for dead
)"};
}

}  // namespace

Module RelayModule() {
  return Module{
      .name = "relay",
      .migrations =
          [] {
            std::vector<store::Migration> m = TrafficMigrations();
            for (store::Migration& c : ClusterMigrations()) m.push_back(std::move(c));
            return m;
          },
      .config = ClusterSection(),
      .build = [](ModuleEnv& env) -> Status {
        RelayOptions o;
        // Where instances share PostgreSQL, a stream reaches an agent held by another.
        Cluster* cluster = nullptr;
        if (env.db.Backend() == store::BackendKind::kPostgres) {
          const auto& co = env.config.Section<ClusterOptions>("cluster");
          const std::string url =
              InstanceUrl(co, env.config.listen, !env.config.tls_cert_file.empty());
          if (url.empty()) {
            LogWarn("cluster.no_instance_url",
                    {{"listen", env.config.listen},
                     {"consequence",
                      "streams to agents held by other instances are not reachable through "
                      "this one; set [cluster] instance_url"}});
          } else {
            cluster = &env.services.Own(std::make_unique<Cluster>(env.db, env.clock, co, url));
            GPUNEX_RETURN_IF_ERROR(cluster->Register());
            o.route = [cluster](const std::string& machine) { return cluster->Route(machine); };
            o.holding = [cluster](const std::string& machine, bool held) {
              cluster->Holding(machine, held);
            };
          }
        }
        // A rental that ends closes its connections within a tick (docs/access.md).
        o.unreachable =
            [&db = env.db](
                const std::vector<std::string>& workloads) -> StatusOr<std::vector<std::string>> {
          std::vector<std::string> out;
          GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
            GPUNEX_ASSIGN_OR_RETURN(out, rentals::UnreachableWorkloads(tx, workloads));
            return Status::Ok();
          }));
          return out;
        };
        // Each port's bytes are added to its rental's row every few seconds.
        o.meter = [&db = env.db](const std::vector<PortTraffic>& traffic) {
          Status st = db.Transact([&](store::Tx& tx) { return AddTraffic(tx, traffic); });
          if (!st.ok()) LogWarn("relay.meter_failed", {{"error", st.ToString()}});
        };
        env.services.Own(std::make_unique<Relay>(std::move(o)));
        return Status::Ok();
      },
      .schedule =
          [](Services& services, const Config& config, Background& background) {
            Cluster* cluster = services.Find<Cluster>();
            if (!cluster) return;
            Relay& relay = services.Get<Relay>();
            const auto& co = config.Section<ClusterOptions>("cluster");
            // Every heartbeat says the instance is alive; every fifteenth also records again
            // the agents held here (a write that failed when one arrived is made good) and
            // forgets the instances silent for an hour.
            background.Add({.name = "cluster.heartbeat",
                            .every = std::chrono::seconds(co.heartbeat_s),
                            .pass = [cluster, &relay, beat = 0]() mutable -> Status {
                              const bool all = beat++ % 15 == 0;
                              std::vector<std::string> held;
                              if (all) held = relay.Machines();
                              GPUNEX_ASSIGN_OR_RETURN(bool again,
                                                      cluster->Heartbeat(all ? &held : nullptr));
                              // Forgotten, and its holdings with it: all of them again now.
                              if (again && !all) {
                                held = relay.Machines();
                                return cluster->Heartbeat(&held).status();
                              }
                              return Status::Ok();
                            }});
          },
      .metrics = CollectMetrics,
  };
}

}  // namespace gpunex::platform::relay
