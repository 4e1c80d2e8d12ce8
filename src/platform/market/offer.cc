#include "platform/market/offer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>

#include "common/gpu_catalog.h"
#include "common/ids.h"
#include "platform/applications/applications.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/fleet.h"
#include "platform/pricing/pricing.h"
#include "platform/providers/providers.h"
#include "platform/reliability/reliability.h"

namespace gpunex::platform::market {
namespace {

constexpr std::array<std::string_view, 32> kAdjectives = {
    "amber", "azure", "brisk",  "calm",   "cedar",  "coral", "crisp",  "dawn",
    "ember", "fern",  "frost",  "gentle", "golden", "hazel", "indigo", "ivory",
    "jade",  "keen",  "lunar",  "maple",  "misty",  "noble", "ochre",  "pearl",
    "quiet", "rapid", "russet", "silver", "steady", "tidal", "umber",  "vivid"};
constexpr std::array<std::string_view, 32> kAnimals = {
    "badger", "bison",  "crane",   "dingo", "egret",  "falcon", "gecko", "heron",
    "ibis",   "jackal", "kestrel", "lemur", "lynx",   "marten", "newt",  "ocelot",
    "otter",  "panda",  "puffin",  "quail", "raven",  "robin",  "seal",  "stoat",
    "swift",  "tapir",  "tern",    "viper", "walrus", "wren",   "yak",   "zebra"};

int HexDigit(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

}  // namespace

RankInputs Offer::rank_inputs() const {
  // The ties compare listed_since as the API shows it (whole milliseconds), so that a
  // client ordering the offers it was given gets the same order.
  return {reliability_score,
          performance_score,
          price,
          tier,
          commitment_months,
          uptime_30d,
          std::chrono::floor<std::chrono::milliseconds>(listed_since),
          id};
}

std::string OfferId(std::string_view machine_id, std::string_view gpu_model) {
  std::string key = "gpunex.offer/";
  key.append(machine_id).append("/").append(gpu_model);
  return "ofr_" + Sha256Hex(key).substr(0, 20);
}

std::string Pseudonym(std::string_view provider_id) {
  const std::string h = Sha256Hex("gpunex.pseudonym/" + std::string(provider_id));
  const int a = HexDigit(h[0]) * 16 + HexDigit(h[1]);
  const int b = HexDigit(h[2]) * 16 + HexDigit(h[3]);
  return std::string(kAdjectives[static_cast<size_t>(a) % kAdjectives.size()]) + "-" +
         std::string(kAnimals[static_cast<size_t>(b) % kAnimals.size()]) + "-" + h.substr(4, 4);
}

std::optional<int64_t> ParseCudaVersion(std::string_view v) {
  const size_t dot = v.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= v.size() || v.size() > 9) {
    return std::nullopt;
  }
  int64_t major = 0, minor = 0;
  auto r1 = std::from_chars(v.data(), v.data() + dot, major);
  auto r2 = std::from_chars(v.data() + dot + 1, v.data() + v.size(), minor);
  if (r1.ec != std::errc() || r1.ptr != v.data() + dot || r2.ec != std::errc() ||
      r2.ptr != v.data() + v.size() || minor >= 1000) {
    return std::nullopt;
  }
  return major * 1000 + minor;
}

StatusOr<MachineOffers> LoadMachineOffers(store::Tx& tx, const std::string& machine_id) {
  MachineOffers out;
  out.machine_id = machine_id;
  GPUNEX_ASSIGN_OR_RETURN(std::optional<int64_t> stamp, fleet::OffersStamp(tx, machine_id));
  if (!stamp) return out;
  out.stamp = *stamp;
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m, fleet::LoadMachine(tx, machine_id));
  if (!m) return out;
  std::map<std::string, std::vector<const fleet::MachineGpu*>> by_model;
  int64_t present = 0;
  for (const fleet::MachineGpu& g : m->gpus) {
    if (g.present) ++present;
    if (g.listing.on_marketplace()) by_model[g.catalog_id].push_back(&g);
  }
  if (by_model.empty()) return out;
  GPUNEX_ASSIGN_OR_RETURN(auto prices, pricing::EffectivePrices(tx, machine_id, m->provider_id));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<providers::Provider> provider,
                          providers::FindProvider(tx, m->provider_id));
  GPUNEX_ASSIGN_OR_RETURN(benchmarks::MachineFigures figures,
                          benchmarks::LatestFigures(tx, machine_id));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<reliability::OfferScore> score,
                          reliability::OfferScoreOf(tx, machine_id));
  const double per_gpu = static_cast<double>(std::max<int64_t>(present, 1));
  for (const auto& [model_id, gpus] : by_model) {
    auto price = prices.find(model_id);
    if (price == prices.end()) continue;  // the listing says no_price_set; not reached
    GPUNEX_ASSIGN_OR_RETURN(std::optional<GpuModel> model, catalog::FindModel(tx, model_id));
    GPUNEX_ASSIGN_OR_RETURN(std::optional<applications::OfferTerms> terms,
                            applications::ApprovedOfferTerms(tx, m->provider_id, model_id));
    Offer o;
    o.id = OfferId(machine_id, model_id);
    o.machine_id = machine_id;
    o.provider_id = m->provider_id;
    o.pseudonym = Pseudonym(m->provider_id);
    o.gpu_model = model_id;
    o.gpu_name = model ? model->nvml_name : gpus.front()->name;
    o.price = price->second;
    o.tier = provider ? provider->tier : providers::Tier::kCommunity;
    if (terms) {
      o.country = terms->location.country.value_or("");
      o.region = terms->location.region;
      o.city = terms->location.city;
      o.commitment_months = terms->commitment_months;
    }
    o.performance_score = -1;
    Timestamp first_gpu = gpus.front()->listing_since;
    int64_t min_vram_mb = gpus.front()->vram_mb;
    for (const fleet::MachineGpu* g : gpus) {
      ++o.gpus_total;
      if (g->listing.state == listing::ListingState::kRented) ++o.gpus_rented;
      if (g->listing.available()) {
        ++o.gpus_available;
        o.available_gpu_ids.push_back(g->id);
      }
      auto s = figures.scores.find(g->id);
      const double gs = s == figures.scores.end() ? 0 : s->second;
      o.gpu_performance_scores.push_back(gs);
      o.performance_score = o.performance_score < 0 ? gs : std::min(o.performance_score, gs);
      first_gpu = std::min(first_gpu, g->listing_since);
      min_vram_mb = std::min(min_vram_mb, g->vram_mb);
      o.emulated = o.emulated || g->emulated;
      if (o.cuda_version.empty()) o.cuda_version = g->info.cuda_driver_version;
      if (o.driver_version.empty()) o.driver_version = g->info.driver_version;
    }
    o.vram_gb = model ? model->vram_gb : static_cast<double>(min_vram_mb) / 1024;
    if (score) {
      o.reliability_score = score->score;
      o.reliability_new = score->is_new;
      o.uptime_30d = score->uptime_30d;
    }
    if (figures.network) {
      o.down_mbps = figures.network->download_mbit_s;
      o.up_mbps = figures.network->upload_mbit_s;
      o.latency_ms = figures.network->rtt_p50_ms;
    }
    if (figures.storage) {
      o.storage_read_mb_s = figures.storage->seq_read_mb_s;
      o.storage_write_mb_s = figures.storage->seq_write_mb_s;
      o.storage_read_iops = figures.storage->rand_read_iops;
    }
    o.ram_gb_per_gpu = static_cast<double>(m->host.ram_mb) / 1024 / per_gpu;
    o.cpu_cores_per_gpu = static_cast<double>(m->host.cpu_cores) / per_gpu;
    o.disk_free_gb = static_cast<double>(m->host.disk_free_mb) / 1024;
    o.cpu_model = m->host.cpu_model;
    o.cpu_cores = m->host.cpu_cores;
    o.ram_gb = static_cast<double>(m->host.ram_mb) / 1024;
    o.disk_total_gb = static_cast<double>(m->host.disk_total_mb) / 1024;
    // Since when it has been on the marketplace: the longest a GPU of it has held its
    // present listing state.
    o.listed_since = first_gpu;
    out.offers.push_back(std::move(o));
  }
  return out;
}

}  // namespace gpunex::platform::market
