#include "platform/relay/traffic_store.h"

namespace gpunex::platform::relay {

Status AddTraffic(store::Tx& tx, const std::vector<PortTraffic>& traffic) {
  for (const PortTraffic& t : traffic) {
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO rental_traffic (rental_id, port, in_bytes, out_bytes) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (rental_id, port) DO UPDATE SET "
                "in_bytes = rental_traffic.in_bytes + excluded.in_bytes, "
                "out_bytes = rental_traffic.out_bytes + excluded.out_bytes",
                {t.rental_id, static_cast<int64_t>(t.port), t.in_bytes, t.out_bytes})
            .status());
  }
  return Status::Ok();
}

StatusOr<std::vector<PortTraffic>> TrafficOf(store::Tx& tx, const std::string& rental_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT port, in_bytes, out_bytes FROM rental_traffic WHERE rental_id = ? "
               "ORDER BY port",
               {rental_id}));
  std::vector<PortTraffic> out;
  for (const auto& row : rows) {
    out.push_back(PortTraffic{.rental_id = rental_id,
                              .port = static_cast<uint16_t>(row["port"].Int()),
                              .in_bytes = row["in_bytes"].Int(),
                              .out_bytes = row["out_bytes"].Int()});
  }
  return out;
}

std::vector<store::Migration> TrafficMigrations() {
  return {
      {21,
       "relay",
       "relay: the bytes each rental's ports moved",
       {
           R"(CREATE TABLE rental_traffic (
                rental_id TEXT NOT NULL REFERENCES rentals(id),
                port BIGINT NOT NULL,
                in_bytes BIGINT NOT NULL,
                out_bytes BIGINT NOT NULL,
                PRIMARY KEY (rental_id, port)))",
       },
       {}},
  };
}

}  // namespace gpunex::platform::relay
