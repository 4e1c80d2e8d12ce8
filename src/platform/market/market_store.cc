#include "platform/market/market_store.h"

namespace gpunex::platform::market {

StatusOr<std::optional<Timestamp>> MarketStore::AccruedUntil() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT accrued_until FROM market_progress WHERE id = 1"));
  if (rows.empty()) return std::optional<Timestamp>();
  return std::optional<Timestamp>(rows[0]["accrued_until"].Time());
}

StatusOr<bool> MarketStore::AdvanceAccrued(std::optional<Timestamp> from, Timestamp to) {
  if (!from) {
    GPUNEX_ASSIGN_OR_RETURN(
        int64_t n, tx_.Exec("INSERT INTO market_progress (id, accrued_until) VALUES (1, ?) "
                            "ON CONFLICT (id) DO NOTHING",
                            {ToUnixMicros(to)}));
    return n > 0;
  }
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec("UPDATE market_progress SET accrued_until = ? WHERE id = 1 AND accrued_until = ?",
               {ToUnixMicros(to), ToUnixMicros(*from)}));
  return n > 0;
}

Status MarketStore::AddSupply(int64_t hour, const std::string& gpu_model, const std::string& region,
                              const SupplySums& add) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec("UPDATE market_supply SET listed_gpu_us = listed_gpu_us + ?, rented_gpu_us = "
               "rented_gpu_us + ? WHERE hour = ? AND catalog_id = ? AND region = ?",
               {add.listed_gpu_us, add.rented_gpu_us, hour, gpu_model, region}));
  if (n > 0) return Status::Ok();
  return tx_
      .Exec(
          "INSERT INTO market_supply (hour, catalog_id, region, listed_gpu_us, rented_gpu_us) "
          "VALUES (?, ?, ?, ?, ?)",
          {hour, gpu_model, region, add.listed_gpu_us, add.rented_gpu_us})
      .status();
}

StatusOr<SupplySums> MarketStore::Supply(const std::string& gpu_model, const std::string& region,
                                         int64_t from_hour) {
  std::string sql =
      "SELECT CAST(COALESCE(SUM(listed_gpu_us), 0) AS BIGINT) AS listed_gpu_us, "
      "CAST(COALESCE(SUM(rented_gpu_us), 0) AS BIGINT) AS rented_gpu_us FROM "
      "market_supply WHERE catalog_id = ? AND hour >= ?";
  std::vector<store::Value> params{gpu_model, from_hour};
  if (!region.empty()) {
    sql += " AND region = ?";
    params.emplace_back(region);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(sql, params));
  return SupplySums{rows[0]["listed_gpu_us"].Int(), rows[0]["rented_gpu_us"].Int()};
}

std::vector<store::Migration> MarketMigrations() {
  return {
      {11,
       "market",
       "market: GPU-hours on the marketplace and rented, per hour, model and region",
       {
           R"(CREATE TABLE market_supply (
                hour BIGINT NOT NULL,
                catalog_id TEXT NOT NULL,
                region TEXT NOT NULL,
                listed_gpu_us BIGINT NOT NULL,
                rented_gpu_us BIGINT NOT NULL,
                PRIMARY KEY (catalog_id, region, hour)))",
           R"(CREATE TABLE market_progress (
                id BIGINT PRIMARY KEY,
                accrued_until BIGINT NOT NULL))",
       },
       {}},
  };
}

}  // namespace gpunex::platform::market
