// The topups folder's table and the only SQL that touches it:
//   topups   one row per top-up (topup.h), with the signature of the transaction that
//            credited it; a partial unique index on signature makes one transaction
//            credit at most one top-up, whatever races.
//
// A TopupsStore is a view of one transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"
#include "platform/topups/topup.h"

namespace gpunex::platform::topups {

class TopupsStore {
 public:
  explicit TopupsStore(store::Tx& tx) : tx_(tx) {}

  // kAlreadyExists when the id or the reference exists.
  Status Insert(const Topup& t);
  StatusOr<std::optional<Topup>> Find(const std::string& id);
  // The top-up credited by this transaction.
  StatusOr<std::optional<Topup>> FindBySignature(const std::string& signature);
  // A customer's top-ups, newest first.
  StatusOr<Page<Topup>> List(const std::string& customer_id, const PageRequest& page);
  // A customer's pending top-ups that have not expired at `now`.
  StatusOr<int64_t> CountPending(const std::string& customer_id, Timestamp now);
  // Sets the pending top-ups whose expires_at is <= now expired; returns how many.
  StatusOr<int64_t> Expire(Timestamp now);
  // The top-ups to look for on chain, oldest first: the pending ones and the expired ones
  // not checked since `recheck_before`, all created at or after `watch_from`.
  StatusOr<std::vector<Topup>> Due(Timestamp watch_from, Timestamp recheck_before, int64_t limit);
  // Records a check of an uncredited top-up: its detail and last_checked_at. Returns the
  // rows changed (0 when it was credited meanwhile).
  StatusOr<int64_t> Note(const std::string& id, const std::string& detail, Timestamp now);
  // Sets an uncredited top-up credited. Returns the rows changed (0 when it was credited
  // already); kAlreadyExists when another top-up holds `signature`.
  StatusOr<int64_t> SetCredited(const std::string& id, const std::string& signature, Usdc credited,
                                const std::string& detail, Timestamp now);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> TopupsMigrations();

}  // namespace gpunex::platform::topups
