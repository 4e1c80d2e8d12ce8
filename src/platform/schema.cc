#include "platform/schema.h"

#include "platform/accounts/accounts_store.h"
#include "platform/applications/applications_store.h"
#include "platform/availability/availability_store.h"
#include "platform/benchmarks/benchmarks_store.h"
#include "platform/billing/billing_store.h"
#include "platform/catalog/catalog_store.h"
#include "platform/fleet/fleet_store.h"
#include "platform/idempotency/idempotency_store.h"
#include "platform/market/market_store.h"
#include "platform/notify/notify_store.h"
#include "platform/payouts/payouts_store.h"
#include "platform/pricing/pricing_store.h"
#include "platform/providers/providers_store.h"
#include "platform/reliability/reliability_store.h"
#include "platform/rentals/rentals_store.h"
#include "platform/topups/topups_store.h"

namespace gpunex::platform::schema {

const std::vector<store::Migration>& AllMigrations() {
  static const std::vector<store::Migration> all = [] {
    std::vector<store::Migration> m;
    // The order of the folders is the order of their parts within one version.
    for (auto part :
         {accounts::AccountsMigrations(), catalog::CatalogMigrations(),
          applications::ApplicationsMigrations(), providers::ProvidersMigrations(),
          notify::NotifyMigrations(), fleet::FleetMigrations(), benchmarks::BenchmarksMigrations(),
          idempotency::IdempotencyMigrations(), availability::AvailabilityMigrations(),
          reliability::ReliabilityMigrations(), pricing::PricingMigrations(),
          market::MarketMigrations(), billing::BillingMigrations(), rentals::RentalsMigrations(),
          payouts::PayoutsMigrations(), topups::TopupsMigrations()}) {
      m.insert(m.end(), part.begin(), part.end());
    }
    return m;
  }();
  return all;
}

int LatestVersion() { return store::LatestVersion(AllMigrations()); }

Status MigrateAll(store::Database& db) { return store::Migrate(db, AllMigrations()); }

}  // namespace gpunex::platform::schema
