// The payouts folder's tables and the only SQL that touches them:
//   payout_settings  one row per provider that chose a schedule or a method;
//   payout_runs      one row per (schedule, date) a run was made for;
//   payouts          one row per provider paid by a run, with its state (payout.h);
//   payout_attempts  every Solana transaction signed for a payout, kept for good;
//   payout_skips     the providers a run did not pay, and why;
//   payout_files     the bank files of a run, with their content.
// What payouts needs of the ledger, the rentals and the users it asks of their folders
// (usage.h, run.cc, payouts.cc).
//
// A PayoutsStore is a view of one transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/paging.h"
#include "common/status.h"
#include "platform/payouts/payout.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::payouts {

class PayoutsStore {
 public:
  explicit PayoutsStore(store::Tx& tx) : tx_(tx) {}

  // --- settings
  StatusOr<std::optional<Settings>> FindSettings(const std::string& provider_id);
  Status PutSettings(const Settings& s);
  // The settings of the providers among `ids` that have some, by provider id.
  StatusOr<std::map<std::string, Settings>> SettingsOf(const std::vector<std::string>& ids);

  // --- runs
  StatusOr<std::optional<Run>> FindRun(const std::string& id);
  StatusOr<std::optional<Run>> FindRunFor(Schedule schedule, std::string_view as_of);
  Status InsertRun(const Run& r);
  Status UpdateRun(const Run& r);  // state, eur_rate_ppm, finished_at
  StatusOr<std::vector<Run>> ListRuns(int limit);
  StatusOr<std::vector<std::string>> UnfinishedRuns();
  // Payouts by state and skips by reason, and the total of the payouts.
  Status LoadCounts(Run* r);

  // --- planning
  // The covers_until of the provider's latest payout that was not failed; the epoch when
  // none.
  StatusOr<Timestamp> LastCoveredUntil(const std::string& provider_id);
  Status InsertSkip(const std::string& run_id, const Skip& s);

  // --- payouts
  Status InsertPayout(const Payout& p, int64_t round);
  Status UpdatePayout(const Payout& p);
  Status SetRound(const std::string& payout_id, int64_t round);
  StatusOr<int64_t> Round(const std::string& payout_id);
  StatusOr<std::optional<Payout>> FindPayout(const std::string& id, bool with_attempts);
  // The run's payouts of a method kind in one of `states`, oldest first, at most `limit`.
  StatusOr<std::vector<Payout>> RunPayouts(const std::string& run_id, MethodKind kind,
                                           const std::vector<PayoutState>& states, int limit);
  // Every payout of the run with its attempts (not its provider's name: accounts has it).
  StatusOr<std::vector<Payout>> AllRunPayouts(const std::string& run_id);
  StatusOr<Page<Payout>> ProviderPayouts(const std::string& provider_id, const PageRequest& page);
  StatusOr<std::vector<Payout>> ProviderPayoutsBetween(const std::string& provider_id,
                                                       Timestamp from, Timestamp to);

  // --- attempts
  Status InsertAttempt(const std::string& payout_id, const Attempt& a);
  Status UpdateAttempt(const std::string& payout_id, const Attempt& a);
  // How many of the payout's attempts landed with an error.
  StatusOr<int64_t> FailedAttempts(const std::string& payout_id);
  StatusOr<std::vector<Skip>> Skips(const std::string& run_id);
  // The latest attempt of each payout in `ids`.
  StatusOr<std::map<std::string, Attempt>> LatestAttempts(const std::vector<std::string>& ids);

  // --- files
  Status InsertFile(const BankFile& f);
  Status UpdateFile(const BankFile& f);  // state, sent_at
  StatusOr<std::optional<BankFile>> FindFile(const std::string& run_id, const std::string& name,
                                             bool with_content);
  StatusOr<std::vector<BankFile>> Files(const std::string& run_id, bool with_content);
  StatusOr<std::vector<Payout>> FilePayouts(const std::string& run_id, const std::string& name);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> PayoutsMigrations();

// The method as stored (JSON) and back.
std::string MethodText(const Method& m);
Method MethodFromText(const std::string& text);

}  // namespace gpunex::platform::payouts
