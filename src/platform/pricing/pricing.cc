#include "platform/pricing/pricing.h"

#include <set>
#include <utility>

#include "common/ids.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/history_store.h"
#include "platform/pricing/pricing_store.h"

namespace gpunex::platform::pricing {
namespace {

std::string ItemField(size_t i, std::string_view name) {
  return "items[" + std::to_string(i) + "]." + std::string(name);
}

Status RequireProvider(const accounts::Principal& p) {
  if (!p.user.HasRole(accounts::kRoleProvider)) {
    return PermissionDenied("only providers set prices");
  }
  return Status::Ok();
}

StatusOr<std::function<bool(std::string_view)>> ModelChecker(store::Tx& tx,
                                                             const std::vector<PriceItem>& items) {
  std::set<std::string, std::less<>> known;
  for (const PriceItem& it : items) {
    if (it.gpu_model.empty() || known.count(it.gpu_model)) continue;
    GPUNEX_ASSIGN_OR_RETURN(bool exists, catalog::ModelExists(tx, it.gpu_model));
    if (exists) known.insert(it.gpu_model);
  }
  return std::function<bool(std::string_view)>(
      [known = std::move(known)](std::string_view id) { return known.count(id) > 0; });
}

// Replaces `old` by `items`, writing each difference and its change row through `put`,
// `remove` and the store.
template <typename Put, typename Remove>
Status Replace(PricingStore& s, const std::string& provider_id,
               const std::optional<std::string>& machine_id, const std::vector<Price>& old,
               const std::vector<PriceItem>& items, const accounts::Principal& p, Timestamp now,
               Put put, Remove remove) {
  std::map<std::string, Usdc> before;
  for (const Price& o : old) before[o.gpu_model] = o.price;
  std::map<std::string, Usdc> after;
  for (const PriceItem& it : items) after[it.gpu_model] = it.price;
  auto change = [&](const std::string& model, std::optional<Usdc> from,
                    std::optional<Usdc> to) -> Status {
    return s.InsertChange(provider_id, {NewId("prc"), machine_id, model, from, to, p.user.id, now});
  };
  for (const auto& [model, price] : before) {
    if (after.count(model)) continue;
    GPUNEX_RETURN_IF_ERROR(remove(model));
    GPUNEX_RETURN_IF_ERROR(change(model, price, std::nullopt));
  }
  for (const auto& [model, price] : after) {
    auto it = before.find(model);
    if (it != before.end() && it->second == price) continue;
    GPUNEX_RETURN_IF_ERROR(put(Price{model, price, now}));
    GPUNEX_RETURN_IF_ERROR(
        change(model, it == before.end() ? std::nullopt : std::optional<Usdc>(it->second), price));
  }
  return Status::Ok();
}

}  // namespace

FieldErrors ValidatePriceItems(const std::vector<PriceItem>& items,
                               const std::function<bool(std::string_view)>& model_exists) {
  FieldErrors e;
  if (items.size() > kMaxItems) {
    e["items"] = "at most " + std::to_string(kMaxItems) + " prices";
    return e;
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const PriceItem& it = items[i];
    if (it.gpu_model.empty()) {
      e[ItemField(i, "gpu_model")] = "is required";
    } else if (!model_exists(it.gpu_model)) {
      e[ItemField(i, "gpu_model")] = "is not a GPU model of the catalog";
    } else if (!seen.insert(it.gpu_model).second) {
      e[ItemField(i, "gpu_model")] = "is priced twice";
    }
    if (!it.price.is_positive()) {
      e[ItemField(i, "price_micro")] = "must be more than 0";
    } else if (it.price > kMaxPrice) {
      e[ItemField(i, "price_micro")] = "must be at most 1000000000 (1,000 USDC per GPU-hour)";
    }
  }
  return e;
}

StatusOr<std::map<std::string, Usdc>> EffectivePrices(store::Tx& tx, const std::string& machine_id,
                                                      const std::string& provider_id) {
  PricingStore s(tx);
  std::map<std::string, Usdc> out;
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Price> mine, s.ProviderPrices(provider_id));
  for (const Price& p : mine) out[p.gpu_model] = p.price;
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Price> overrides, s.MachinePrices(machine_id));
  for (const Price& p : overrides) out[p.gpu_model] = p.price;
  return out;
}

StatusOr<std::map<std::string, Usdc>> EffectivePrices(store::Tx& tx,
                                                      const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m, fleet::LoadMachine(tx, machine_id));
  if (!m) return NotFound("no such machine");
  return EffectivePrices(tx, machine_id, m->provider_id);
}

Status ReportMachine(store::Tx& tx, Timestamp now, const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(auto prices, EffectivePrices(tx, machine_id));
  std::set<std::string> priced;
  for (const auto& [model, price] : prices) priced.insert(model);
  return fleet::ReportPriceFacts(tx, now, machine_id, priced);
}

Pricing::Pricing(store::Database& db, fleet::Fleet& fleet, PricingOptions options)
    : db_(db), options_(options) {
  fleet.OnHello([](store::Tx& tx, Timestamp now, const fleet::HelloFacts& hello) -> Status {
    return ReportMachine(tx, now, hello.machine_id);
  });
}

StatusOr<std::vector<Price>> Pricing::ProviderPrices(const accounts::Principal& p) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  std::vector<Price> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, PricingStore(tx).ProviderPrices(p.user.id));
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::vector<Price>> Pricing::SetProviderPrices(const accounts::Principal& p,
                                                        const std::vector<PriceItem>& items) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  const Timestamp now = options_.clock->Now();
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(auto exists, ModelChecker(tx, items));
    if (FieldErrors e = ValidatePriceItems(items, exists); !e.empty()) return ValidationFailed(e);
    PricingStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Price> old, s.ProviderPrices(p.user.id));
    GPUNEX_RETURN_IF_ERROR(Replace(
        s, p.user.id, std::nullopt, old, items, p, now,
        [&](const Price& price) { return s.PutProviderPrice(p.user.id, price, p.user.id); },
        [&](const std::string& model) { return s.DeleteProviderPrice(p.user.id, model); }));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::MachineSummary> machines,
                            fleet::MachineSummaries(tx, p.user.id));
    for (const auto& m : machines) GPUNEX_RETURN_IF_ERROR(ReportMachine(tx, now, m.id));
    return accounts::Audit(tx, now, p.user.id, "prices.set",
                           std::to_string(items.size()) + " models", p.ip);
  }));
  return ProviderPrices(p);
}

StatusOr<MachinePrices> Pricing::GetMachinePrices(const accounts::Principal& p,
                                                  const std::string& machine_id) {
  MachinePrices out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        fleet::MachineOwner owner,
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kRead));
    out = {machine_id, {}, {}};
    GPUNEX_ASSIGN_OR_RETURN(out.overrides, PricingStore(tx).MachinePrices(machine_id));
    GPUNEX_ASSIGN_OR_RETURN(auto all, EffectivePrices(tx, machine_id, owner.provider_id));
    GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m, fleet::LoadMachine(tx, machine_id));
    if (!m) return NotFound("no such machine");
    for (const fleet::MachineGpu& g : m->gpus) {
      if (auto it = all.find(g.catalog_id); it != all.end()) out.effective.insert(*it);
    }
    return Status::Ok();
  }));
  return out;
}

StatusOr<MachinePrices> Pricing::SetMachinePrices(const accounts::Principal& p,
                                                  const std::string& machine_id,
                                                  const std::vector<PriceItem>& items) {
  const Timestamp now = options_.clock->Now();
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        fleet::MachineOwner owner,
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kChange));
    GPUNEX_ASSIGN_OR_RETURN(auto exists, ModelChecker(tx, items));
    if (FieldErrors e = ValidatePriceItems(items, exists); !e.empty()) return ValidationFailed(e);
    PricingStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Price> old, s.MachinePrices(machine_id));
    GPUNEX_RETURN_IF_ERROR(Replace(
        s, owner.provider_id, machine_id, old, items, p, now,
        [&](const Price& price) { return s.PutMachinePrice(machine_id, price, p.user.id); },
        [&](const std::string& model) { return s.DeleteMachinePrice(machine_id, model); }));
    GPUNEX_RETURN_IF_ERROR(ReportMachine(tx, now, machine_id));
    return accounts::Audit(tx, now, p.user.id, "machine.prices_set", machine_id, p.ip);
  }));
  return GetMachinePrices(p, machine_id);
}

StatusOr<Page<PriceChange>> Pricing::History(const accounts::Principal& p,
                                             const PageRequest& page) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  Page<PriceChange> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, PricingStore(tx).Changes(p.user.id, page));
    return Status::Ok();
  }));
  return out;
}

}  // namespace gpunex::platform::pricing
