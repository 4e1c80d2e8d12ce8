// Top-ups (PAY-6): customers add USDC to their balance by paying a Solana Pay transfer
// request (solana_pay.h) that gpunexd makes for them, shown as a link and a QR code.
//
// A top-up asks for an amount and carries a reference: 32 random bytes that the wallet
// adds to the transfer as a readonly account, so that the payment can be found with
// getSignaturesForAddress(reference). gpunexd looks for it in the background (Poll, every
// loop_ms) and when the customer reads the top-up, and checks each transaction found
// with getTransaction (CheckPayment): it succeeded, its last instruction is a USDC
// transfer to the platform's token account (the associated token account of `recipient`
// for `mint`), and the token balances show at least the amount asked arriving there.
// What arrived is credited, all of it: a ledger transfer "topup_<signature>" from
// world_usdc to the customer's account, the top-up set credited with the signature, and
// a dashboard notification, in one store transaction that re-reads the top-up first.
//
// Once per signature, whatever arrives first or twice: the transfer id is the
// signature's, so a retry, a second gpunexd instance or a concurrent check moves nothing
// again, and a unique index on the top-ups' signatures keeps a transaction that carries
// two references from crediting two top-ups. Only one signature credits a top-up: the
// oldest qualifying one. A second payment to the same reference is not credited: when it
// is seen together with the first it is logged (topups.second_payment), and once the
// top-up is credited its reference is no longer watched; an operator refunds or credits
// such a payment by hand. A transaction that does not qualify (failed, another token,
// too little, another recipient, a last instruction that is no transfer) is never
// credited; the top-up's detail says why, and it keeps waiting for a payment that does.
//
// A top-up expires ttl_s after its creation (its link should no longer be paid), but it
// is still watched, less often (every expired_check_s), and credited when paid, until
// watch_s after its creation.
//
// Chain reads happen outside store transactions; an RPC error ends a check without
// effect (the next one retries).
//
// Authorization: a customer creates and reads their own top-ups only; another's is
// NotFound.
//
// Thread-safety: Topups is safe to share.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "common/background.h"
#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/notify/notify.h"
#include "platform/solana/address.h"
#include "platform/solana/rpc.h"
#include "platform/store/db.h"
#include "platform/topups/topup.h"

namespace gpunex::platform::topups {

// The ledger's side of a top-up (docs/billing.md).
inline constexpr std::string_view kWorldUsdc = "world_usdc";  // USDC that came in on chain
inline constexpr std::string_view kUsdcTopup = "usdc_topup";  // world_usdc → customer
// The transfer id of the payment with this signature.
std::string TransferId(std::string_view signature);

struct TopupsOptions {
  solana::Pubkey mint{};                 // USDC
  solana::Pubkey recipient{};            // the platform's wallet (the owner of its token account)
  std::string commitment = "confirmed";  // or "finalized" ("processed" counts as "confirmed")
  int64_t ttl_s = 3600;
  int64_t watch_s = 7 * 24 * 3600;
  int64_t expired_check_s = 300;  // how often an expired top-up is looked for
  int loop_ms = 2000;
  Usdc min = Usdc::Micros(1'000'000);
  Usdc max = Usdc::Micros(100'000'000'000);
  int max_pending_per_customer = 20;
  std::string label = "gpunex";
  const Clock* clock = &SystemClock();
  notify::NoticeSettings notices;
};

// The signatures asked for per reference and check.
inline constexpr int kSignaturesPerCheck = 20;
// The top-ups one Poll looks at, at most.
inline constexpr int64_t kMaxPerPoll = 500;

class Topups {
 public:
  // `rpc` may be null: then top-ups are not offered (Create and Check fail with
  // kFailedPrecondition; reading existing ones works). REQUIRES: `rpc` outlives this.
  Topups(store::Database& db, solana::Rpc* rpc, TopupsOptions options);
  Topups(const Topups&) = delete;
  Topups& operator=(const Topups&) = delete;

  bool offered() const { return rpc_ != nullptr; }
  // The platform's associated token account for the mint: where payments arrive.
  const solana::Pubkey& token_account() const { return token_account_; }
  const TopupsOptions& options() const { return options_; }

  // A new pending top-up of the caller for `amount`, with its URL. Fails with a field
  // error on "amount_micro" outside [min, max]; kFailedPrecondition when top-ups are not
  // offered or the caller has max_pending_per_customer pending ones already.
  StatusOr<Topup> Create(const accounts::Principal& p, Usdc amount);
  // One of the caller's top-ups (NotFound for another's); a pending one is checked on
  // chain first (an RPC error is logged and the stored state answered).
  StatusOr<Topup> Get(const accounts::Principal& p, const std::string& id);
  // The caller's top-ups, newest first.
  StatusOr<Page<Topup>> List(const accounts::Principal& p, const PageRequest& page);
  // The QR code (SVG) of one of the caller's top-ups' URL.
  StatusOr<std::string> QrSvg(const accounts::Principal& p, const std::string& id);

  // One round of the background work (tests call it directly): expires the pending
  // top-ups past their ttl and checks those due (qualify for Due in topups_store.h).
  // Returns how many this round credited. An RPC that is unavailable ends the round
  // with its status; other failures of one top-up are logged and the round goes on.
  StatusOr<int64_t> Poll();
  // Looks for the payment of one top-up and credits it. Returns true when this call
  // credited it; false when nothing qualifying was found, it was credited already (by
  // this or another instance), or it is no longer watched. Fails with kNotFound for an
  // unknown id, with the RPC's status when the chain could not be read, with the store's
  // when the credit could not be written (kOutcomeUnknown: the next check finds out).
  StatusOr<bool> Check(const std::string& topup_id);

  // Schedules Poll() every loop_ms (nothing without an RPC).
  void ScheduleOn(Background& background);

 private:
  enum class Claim { kCredited, kAlreadyCredited, kTaken };
  StatusOr<Claim> Credit(const Topup& t, const std::string& signature, Usdc received,
                         Timestamp now);
  // What the API shows: the URL, recipient and mint filled in, and a pending top-up
  // past its expiry shown expired.
  Topup View(Topup t, Timestamp now) const;
  StatusOr<Topup> Own(const accounts::Principal& p, const std::string& id);
  // Whether (top-up, signature) was found not to qualify before (a final finding).
  bool KnownRefused(const std::string& key) EXCLUDES(mu_);
  void Refused(const std::string& key) EXCLUDES(mu_);

  store::Database& db_;
  solana::Rpc* const rpc_;
  const TopupsOptions options_;
  const solana::Pubkey token_account_;
  Mutex mu_;
  // "<top-up id> <signature>" of transactions that do not pay that top-up, so that they
  // are not fetched again at every round (bounded: cleared when it grows too large).
  std::set<std::string> refused_ GUARDED_BY(mu_);
};

}  // namespace gpunex::platform::topups
