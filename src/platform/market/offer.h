// An offer (MKT-3): what a customer can rent on one machine for one GPU model, with what
// the marketplace shows of it, and how it is loaded from the store.
//
// One offer per machine and GPU model: the machine's GPUs of that model that are on the
// marketplace (listing/listing.h: listed, rented or being benchmarked). gpus_total counts
// them, gpus_available the listed ones, which can be rented now. An offer's id is derived
// from its machine and model (stable, and not the machine id, which customers do not
// see); its provider shows as a stable pseudonym derived from the provider's id.
//
// Thread-safety: value types; LoadMachineOffers reads the caller's transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/money.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/market/ranking.h"
#include "platform/store/db.h"

namespace gpunex::platform::market {

// Text made once from an offer and kept with it: the API renders an offer's public fields
// once per loaded offer, not once per search (offers do not change once published; a
// change loads a new one). A copy starts empty. Thread-safe.
class RenderCache {
 public:
  RenderCache() = default;
  RenderCache(const RenderCache&) {}
  RenderCache& operator=(const RenderCache&) { return *this; }
  const std::string& Get(const std::function<std::string()>& make) const {
    std::call_once(once_, [&] { text_ = make(); });
    return text_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::string text_;
};

struct Offer {
  std::string id;  // "ofr_" + 20 hex digits
  std::string machine_id;
  std::string provider_id;
  std::string pseudonym;
  std::string gpu_model;  // catalog id
  std::string gpu_name;   // the catalog's display name
  int64_t gpus_available = 0;
  int64_t gpus_total = 0;
  int64_t gpus_rented = 0;                     // in a customer's workload now
  std::vector<std::string> available_gpu_ids;  // machine_gpus.id of the listed GPUs
  double vram_gb = 0;
  double performance_score = 0;                // the minimum of its GPUs'
  std::vector<double> gpu_performance_scores;  // by GPU index
  double reliability_score = 100;
  bool reliability_new = true;
  std::optional<double> uptime_30d;
  Usdc price;  // per GPU-hour
  std::string country, region, city;
  providers::Tier tier = providers::Tier::kCommunity;
  // Measured by the newest benchmark run that measured the machine's network and storage.
  std::optional<double> down_mbps, up_mbps, latency_ms;
  std::optional<double> storage_read_mb_s, storage_write_mb_s, storage_read_iops;
  std::string cuda_version, driver_version;
  double ram_gb_per_gpu = 0;
  double cpu_cores_per_gpu = 0;
  double disk_free_gb = 0;
  // The host as its agent reports it (fleet's machine host facts), for the whole machine.
  std::string cpu_model;
  int64_t cpu_cores = 0;
  double ram_gb = 0, disk_total_gb = 0;
  int64_t commitment_months = 0;
  Timestamp listed_since;
  bool emulated = false;

  RankInputs rank_inputs() const;

  RenderCache rendered;  // the API's JSON of the public fields
};

// A machine's offers as loaded at one stamp (fleet offers_changed_at).
struct MachineOffers {
  std::string machine_id;
  int64_t stamp = 0;
  std::vector<Offer> offers;  // by GPU model; empty when nothing is on the marketplace
};

std::string OfferId(std::string_view machine_id, std::string_view gpu_model);
// "amber-heron-3f2a": the same for a provider everywhere, telling nothing of who it is.
std::string Pseudonym(std::string_view provider_id);
// "12.4" → 12004 (major·1000 + minor); nullopt when it is not "<major>.<minor>".
std::optional<int64_t> ParseCudaVersion(std::string_view v);

// The machine's offers from the store now (an empty list for a machine that is gone or
// has nothing on the marketplace).
StatusOr<MachineOffers> LoadMachineOffers(store::Tx& tx, const std::string& machine_id);

}  // namespace gpunex::platform::market
