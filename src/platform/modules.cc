#include "platform/modules.h"

#include "platform/access/access_module.h"
#include "platform/accounts/accounts_module.h"
#include "platform/applications/applications_module.h"
#include "platform/availability/availability_module.h"
#include "platform/benchmarks/benchmarks_module.h"
#include "platform/billing/billing_module.h"
#include "platform/catalog/catalog_module.h"
#include "platform/fleet/fleet_module.h"
#include "platform/idempotency/idempotency_module.h"
#include "platform/market/market_module.h"
#include "platform/notify/notify_module.h"
#include "platform/payouts/payouts_module.h"
#include "platform/pricing/pricing_module.h"
#include "platform/providers/providers_module.h"
#include "platform/relay/relay_module.h"
#include "platform/reliability/reliability_module.h"
#include "platform/rentals/rentals_module.h"
#include "platform/solana/solana_module.h"
#include "platform/sshgate/sshgate_module.h"
#include "platform/sshkeys/ssh_keys_module.h"
#include "platform/topups/topups_module.h"

namespace gpunex::platform {

const std::vector<Module>& Modules() {
  static const std::vector<Module> all = {
      accounts::AccountsModule(),
      catalog::CatalogModule(),
      applications::ApplicationsModule(),
      providers::ProvidersModule(),
      notify::NotifyModule(),
      fleet::FleetModule(),
      benchmarks::BenchmarksModule(),
      idempotency::IdempotencyModule(),
      availability::AvailabilityModule(),
      reliability::ReliabilityModule(),
      pricing::PricingModule(),
      market::MarketModule(),
      billing::BillingModule(),
      rentals::RentalsModule(),
      solana::SolanaModule(),
      payouts::PayoutsModule(),
      topups::TopupsModule(),
      sshkeys::SshKeysModule(),
      relay::RelayModule(),
      access::AccessModule(),
      sshgate::SshGateModule(),
  };
  return all;
}

}  // namespace gpunex::platform
