#include "platform/relay/relay_module.h"

#include "common/log.h"
#include "platform/http/metrics.h"
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

}  // namespace

Module RelayModule() {
  return Module{
      .name = "relay",
      .migrations = TrafficMigrations,
      .build = [](ModuleEnv& env) -> Status {
        RelayOptions o;
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
      .metrics = CollectMetrics,
  };
}

}  // namespace gpunex::platform::relay
