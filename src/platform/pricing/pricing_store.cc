#include "platform/pricing/pricing_store.h"

#include "platform/store/paging.h"
#include "platform/store/rows.h"

namespace gpunex::platform::pricing {
namespace {

using store::KeyColumn;

const store::RowMapper<Price>& PriceRows() {
  static const auto* const m = new store::RowMapper<Price>({
      {"catalog_id", &Price::gpu_model},
      {"price_micro", &Price::price},
      {"updated_at", &Price::updated_at},
  });
  return *m;
}

store::Value OptMicros(const std::optional<Usdc>& u) {
  return u ? store::Value(u->micros()) : store::Value(nullptr);
}

const store::RowMapper<PriceChange>& ChangeRows() {
  static const auto* const m = new store::RowMapper<PriceChange>({
      {"id", &PriceChange::id},
      {"machine_id", &PriceChange::machine_id},
      {"catalog_id", &PriceChange::gpu_model},
      {"old_price_micro", &PriceChange::old_price},
      {"new_price_micro", &PriceChange::new_price},
      {"changed_by", &PriceChange::changed_by},
      {"at", &PriceChange::at},
  });
  return *m;
}

}  // namespace

StatusOr<std::vector<Price>> PricingStore::ProviderPrices(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + PriceRows().Select() +
                    " FROM provider_prices WHERE provider_id = ? ORDER BY catalog_id",
                {provider_id}));
  return PriceRows().Decode(rows);
}

StatusOr<std::vector<Price>> PricingStore::MachinePrices(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + PriceRows().Select() +
                    " FROM machine_prices WHERE machine_id = ? ORDER BY catalog_id",
                {machine_id}));
  return PriceRows().Decode(rows);
}

Status PricingStore::PutProviderPrice(const std::string& provider_id, const Price& p,
                                      const std::string& by) {
  GPUNEX_RETURN_IF_ERROR(DeleteProviderPrice(provider_id, p.gpu_model));
  return tx_
      .Exec(
          "INSERT INTO provider_prices (provider_id, catalog_id, price_micro, updated_at, "
          "updated_by) VALUES (?, ?, ?, ?, ?)",
          {provider_id, p.gpu_model, p.price.micros(), ToUnixMicros(p.updated_at), by})
      .status();
}

Status PricingStore::DeleteProviderPrice(const std::string& provider_id,
                                         const std::string& gpu_model) {
  return tx_
      .Exec("DELETE FROM provider_prices WHERE provider_id = ? AND catalog_id = ?",
            {provider_id, gpu_model})
      .status();
}

Status PricingStore::PutMachinePrice(const std::string& machine_id, const Price& p,
                                     const std::string& by) {
  GPUNEX_RETURN_IF_ERROR(DeleteMachinePrice(machine_id, p.gpu_model));
  return tx_
      .Exec(
          "INSERT INTO machine_prices (machine_id, catalog_id, price_micro, updated_at, "
          "updated_by) VALUES (?, ?, ?, ?, ?)",
          {machine_id, p.gpu_model, p.price.micros(), ToUnixMicros(p.updated_at), by})
      .status();
}

Status PricingStore::DeleteMachinePrice(const std::string& machine_id,
                                        const std::string& gpu_model) {
  return tx_
      .Exec("DELETE FROM machine_prices WHERE machine_id = ? AND catalog_id = ?",
            {machine_id, gpu_model})
      .status();
}

Status PricingStore::InsertChange(const std::string& provider_id, const PriceChange& c) {
  return tx_
      .Exec(std::string("INSERT INTO price_changes (provider_id, ") + ChangeRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            {provider_id, c.id, c.machine_id ? store::Value(*c.machine_id) : store::Value(nullptr),
             c.gpu_model, OptMicros(c.old_price), OptMicros(c.new_price), c.changed_by,
             ToUnixMicros(c.at)})
      .status();
}

StatusOr<Page<PriceChange>> PricingStore::Changes(const std::string& provider_id,
                                                  const PageRequest& page) {
  store::PageQuery q{ChangeRows().Select(),
                     "FROM price_changes",
                     "provider_id = ?",
                     {provider_id},
                     {{"at", KeyColumn::Type::kInt}, {"id", KeyColumn::Type::kText}},
                     true};
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return ChangeRows().DecodePage(rows);
}

std::vector<store::Migration> PricingMigrations() {
  return {
      {11,
       "pricing",
       "pricing: hourly prices per provider and GPU model, machine overrides, every change",
       {
           R"(CREATE TABLE provider_prices (
                provider_id TEXT NOT NULL REFERENCES providers(user_id),
                catalog_id TEXT NOT NULL,
                price_micro BIGINT NOT NULL CHECK (price_micro > 0),
                updated_at BIGINT NOT NULL,
                updated_by TEXT NOT NULL,
                PRIMARY KEY (provider_id, catalog_id)))",
           R"(CREATE TABLE machine_prices (
                machine_id TEXT NOT NULL REFERENCES machines(id),
                catalog_id TEXT NOT NULL,
                price_micro BIGINT NOT NULL CHECK (price_micro > 0),
                updated_at BIGINT NOT NULL,
                updated_by TEXT NOT NULL,
                PRIMARY KEY (machine_id, catalog_id)))",
           R"(CREATE TABLE price_changes (
                id TEXT PRIMARY KEY,
                provider_id TEXT NOT NULL REFERENCES providers(user_id),
                machine_id TEXT,
                catalog_id TEXT NOT NULL,
                old_price_micro BIGINT,
                new_price_micro BIGINT,
                changed_by TEXT NOT NULL,
                at BIGINT NOT NULL))",
           "CREATE INDEX price_changes_provider ON price_changes (provider_id, at, id)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::pricing
