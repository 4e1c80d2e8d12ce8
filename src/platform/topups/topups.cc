#include "platform/topups/topups.h"

#include <sodium.h>

#include <array>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "common/log.h"
#include "platform/billing/ledger.h"
#include "platform/topups/qr.h"
#include "platform/topups/solana_pay.h"
#include "platform/topups/topups_store.h"

namespace gpunex::platform::topups {
namespace {

constexpr std::string_view kNotOffered =
    "top-ups in USDC are not offered: this platform has no Solana RPC endpoint configured";
constexpr size_t kMaxRefused = 10'000;

std::string Text(Usdc u) { return DecimalUsdc(u) + " USDC"; }

// A top-up's detail when the transaction `signature` does not pay it.
std::string NotCredited(std::string_view reason, const std::string& signature) {
  return std::string(reason) + ": not credited (transaction " + signature + ")";
}

std::string NewReference() {
  std::array<uint8_t, 32> bytes;
  randombytes_buf(bytes.data(), bytes.size());
  return solana::Base58(bytes);
}

StatusOr<solana::Pubkey> ReferenceKey(const Topup& t) {
  auto bytes = t.reference.size() <= solana::kMaxPubkeyChars ? solana::DecodeBase58(t.reference)
                                                             : std::nullopt;
  if (!bytes || bytes->size() != 32) return Internal("top-up " + t.id + " has a bad reference");
  solana::Pubkey k;
  std::copy(bytes->begin(), bytes->end(), k.begin());
  return k;
}

// getSignaturesForAddress refuses "processed": a payment is looked for at "confirmed" then.
TopupsOptions Normalized(TopupsOptions o) {
  if (o.commitment == solana::kProcessed) o.commitment = std::string(solana::kConfirmed);
  return o;
}

}  // namespace

std::string TransferId(std::string_view signature) { return "topup_" + std::string(signature); }

Topups::Topups(store::Database& db, solana::Rpc* rpc, TopupsOptions options)
    : db_(db),
      rpc_(rpc),
      options_(Normalized(std::move(options))),
      token_account_(solana::AssociatedTokenAddress(options_.recipient, options_.mint)) {}

Topup Topups::View(Topup t, Timestamp now) const {
  // Shown as it will be stored by the next round (TopupsStore::Expire).
  if (t.status == TopupStatus::kPending && now >= t.expires_at) t.status = TopupStatus::kExpired;
  if (auto ref = ReferenceKey(t); ref.ok()) {
    t.url = TransferRequestUrl({.recipient = options_.recipient,
                                .amount = t.amount,
                                .mint = options_.mint,
                                .reference = *ref,
                                .label = options_.label,
                                .message = "Top up of " + Text(t.amount),
                                .memo = t.id});
  }
  t.recipient = solana::ToBase58(options_.recipient);
  t.mint = solana::ToBase58(options_.mint);
  return t;
}

StatusOr<Topup> Topups::Create(const accounts::Principal& p, Usdc amount) {
  if (!rpc_) return FailedPrecondition(std::string(kNotOffered));
  if (amount < options_.min) {
    return FieldError("amount_micro", "must be at least " + Text(options_.min) + " (" +
                                          std::to_string(options_.min.micros()) + ")");
  }
  if (amount > options_.max) {
    return FieldError("amount_micro", "must be at most " + Text(options_.max) + " (" +
                                          std::to_string(options_.max.micros()) + ")");
  }
  const Timestamp now = options_.clock->Now();
  Topup t;
  t.id = NewId("tu");
  t.customer_id = p.user.id;
  t.amount = amount;
  t.reference = NewReference();
  t.status = TopupStatus::kPending;
  t.detail = "waiting for a payment of " + Text(amount);
  t.created_at = now;
  t.expires_at = now + Seconds(options_.ttl_s);
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    TopupsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(int64_t pending, s.CountPending(p.user.id, now));
    if (pending >= options_.max_pending_per_customer) {
      return FailedPrecondition("you have " + std::to_string(pending) +
                                " top-ups waiting for payment, the most there may be: pay one "
                                "or let them expire");
    }
    GPUNEX_RETURN_IF_ERROR(s.Insert(t));
    return accounts::Audit(tx, now, p.user.id, "topup.created", t.id, p.ip,
                           {{"amount_micro", std::to_string(amount.micros())}});
  }));
  return View(std::move(t), now);
}

StatusOr<Topup> Topups::Own(const accounts::Principal& p, const std::string& id) {
  std::optional<Topup> t;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(t, TopupsStore(tx).Find(id));
    return Status::Ok();
  }));
  if (!t || t->customer_id != p.user.id) return NotFound("no such top-up");
  return std::move(*t);
}

StatusOr<Topup> Topups::Get(const accounts::Principal& p, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(Topup t, Own(p, id));
  if (t.status == TopupStatus::kPending && rpc_) {
    if (auto checked = Check(id); checked.ok()) {
      GPUNEX_ASSIGN_OR_RETURN(t, Own(p, id));  // credited, or a new finding in its detail
    } else {
      LogWarn("topups.check_failed", {{"topup", id}, {"error", checked.status().ToString()}});
    }
  }
  return View(std::move(t), options_.clock->Now());
}

StatusOr<Page<Topup>> Topups::List(const accounts::Principal& p, const PageRequest& page) {
  Page<Topup> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, TopupsStore(tx).List(p.user.id, page));
    return Status::Ok();
  }));
  const Timestamp now = options_.clock->Now();
  for (Topup& t : out.items) t = View(std::move(t), now);
  return out;
}

StatusOr<std::string> Topups::QrSvg(const accounts::Principal& p, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(Topup t, Own(p, id));
  Topup v = View(std::move(t), options_.clock->Now());
  if (v.url.empty()) return Internal("top-up " + id + " has a bad reference");
  return topups::QrSvg(v.url);
}

StatusOr<int64_t> Topups::Poll() {
  if (!rpc_) return int64_t{0};
  const Timestamp now = options_.clock->Now();
  std::vector<Topup> due;
  GPUNEX_RETURN_IF_ERROR(
      db_.Transact([&](store::Tx& tx) -> Status { return TopupsStore(tx).Expire(now).status(); }));
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        due, TopupsStore(tx).Due(now - Seconds(options_.watch_s),
                                 now - Seconds(options_.expired_check_s), kMaxPerPoll));
    return Status::Ok();
  }));
  int64_t credited = 0;
  for (const Topup& t : due) {
    auto c = Check(t.id);
    if (c.ok()) {
      credited += *c ? 1 : 0;
      continue;
    }
    if (c.status().code() == StatusCode::kUnavailable) return c.status();
    LogWarn("topups.check_failed", {{"topup", t.id}, {"error", c.status().ToString()}});
  }
  return credited;
}

bool Topups::KnownRefused(const std::string& key) {
  MutexLock lock(&mu_);
  return refused_.count(key) > 0;
}

void Topups::Refused(const std::string& key) {
  MutexLock lock(&mu_);
  if (refused_.size() >= kMaxRefused) refused_.clear();
  refused_.insert(key);
}

StatusOr<bool> Topups::Check(const std::string& topup_id) {
  if (!rpc_) return FailedPrecondition(std::string(kNotOffered));
  const Timestamp now = options_.clock->Now();
  std::optional<Topup> found;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(found, TopupsStore(tx).Find(topup_id));
    return Status::Ok();
  }));
  if (!found) return NotFound("no such top-up");
  const Topup& t = *found;
  if (t.status == TopupStatus::kCredited || t.created_at + Seconds(options_.watch_s) < now)
    return false;
  GPUNEX_ASSIGN_OR_RETURN(solana::Pubkey reference, ReferenceKey(t));

  // The chain, outside any store transaction.
  GPUNEX_ASSIGN_OR_RETURN(std::vector<solana::SignatureInfo> sigs,
                          rpc_->SignaturesForAddress(reference, kSignaturesPerCheck, std::nullopt,
                                                     options_.commitment));
  std::string finding;  // why the newest transaction looked at was not credited
  for (auto it = sigs.rbegin(); it != sigs.rend(); ++it) {  // oldest first
    const std::string& sig = it->signature;
    if (it->err) {
      finding = NotCredited("the transaction failed on chain", sig);
      continue;
    }
    const std::string key = t.id + " " + sig;
    if (KnownRefused(key)) continue;
    GPUNEX_ASSIGN_OR_RETURN(std::optional<solana::TransactionInfo> tx,
                            rpc_->GetTransaction(sig, options_.commitment));
    if (!tx) continue;  // not yet at our commitment: the next check sees it
    PaymentCheck paid = CheckPayment(*tx, reference, options_.mint, token_account_, t.amount);
    if (!paid.ok) {
      finding = NotCredited(paid.reason, sig);
      LogWarn("topups.payment_refused",
              {{"topup", t.id}, {"signature", sig}, {"reason", paid.reason}});
      Refused(key);
      continue;
    }
    GPUNEX_ASSIGN_OR_RETURN(Claim claim, Credit(t, sig, paid.received, now));
    if (claim == Claim::kTaken) {
      finding = NotCredited("the transaction was credited to another top-up already", sig);
      LogWarn("topups.payment_taken", {{"topup", t.id}, {"signature", sig}});
      Refused(key);
      continue;
    }
    // Newer transactions with the same reference: a second payment, never credited.
    json::array later;
    for (auto newer = std::next(it); newer != sigs.rend(); ++newer) {
      if (!newer->err) later.emplace_back(newer->signature);
    }
    if (!later.empty()) {
      LogWarn("topups.second_payment",
              {{"topup", t.id}, {"credited_signature", sig}, {"not_credited", std::move(later)}});
    }
    return claim == Claim::kCredited;
  }
  // Nothing credited: record what was found (and, for an expired one, when it was looked
  // for, which paces its checks).
  if ((!finding.empty() && finding != t.detail) || t.status == TopupStatus::kExpired) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      return TopupsStore(tx).Note(t.id, finding.empty() ? t.detail : finding, now).status();
    }));
  }
  return false;
}

StatusOr<Topups::Claim> Topups::Credit(const Topup& t, const std::string& signature, Usdc received,
                                       Timestamp now) {
  Claim claim = Claim::kTaken;
  auto attempt = [&](store::Tx& tx) -> Status {
    TopupsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Topup> row, s.Find(t.id));
    if (!row) return NotFound("no such top-up");
    if (row->status == TopupStatus::kCredited) {
      claim = Claim::kAlreadyCredited;
      return Status::Ok();
    }
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Topup> holder, s.FindBySignature(signature));
    GPUNEX_ASSIGN_OR_RETURN(std::optional<billing::Transfer> moved,
                            billing::FindTransfer(tx, TransferId(signature)));
    if (holder || moved) {
      claim = Claim::kTaken;
      return Status::Ok();
    }
    billing::Transfer transfer{.id = TransferId(signature),
                               .kind = std::string(kUsdcTopup),
                               .debit_account = std::string(kWorldUsdc),
                               .credit_account = billing::CustomerAccount(row->customer_id),
                               .amount = received,
                               .rental_id = std::nullopt,
                               .reference = "USDC top-up " + row->id,
                               .at = now};
    GPUNEX_RETURN_IF_ERROR(billing::Post(tx, {transfer}).status());
    std::string detail = "credited " + Text(received);
    if (received != row->amount) detail += " (" + Text(row->amount) + " asked)";
    detail += " from transaction " + signature;
    GPUNEX_ASSIGN_OR_RETURN(int64_t changed,
                            s.SetCredited(row->id, signature, received, detail, now));
    if (changed != 1) return Aborted("top-up " + row->id + " changed while it was credited");
    GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, row->customer_id));
    notify::Notice n;
    n.kind = "topup.credited";
    n.title = "Your top-up of " + Text(received) + " arrived";
    n.text =
        Text(received) + " from Solana transaction " + signature + " were added to your balance.";
    n.link = "/#/balance";
    GPUNEX_RETURN_IF_ERROR(
        notify::SendNotice(tx, now, {u.id, u.email, u.name}, n, options_.notices));
    claim = Claim::kCredited;
    return Status::Ok();
  };
  Status st = db_.Transact(attempt);
  if (st.code() == StatusCode::kAlreadyExists) {
    // Another writer credited this top-up or claimed the signature between our read and
    // our write (the unique indexes): the committed state says which, and claims nothing.
    st = db_.Transact(attempt);
  }
  GPUNEX_RETURN_IF_ERROR(st);
  if (claim == Claim::kCredited) {
    LogInfo("topups.credited", {{"topup", t.id},
                                {"customer", t.customer_id},
                                {"signature", signature},
                                {"amount_micro", received.micros()}});
  }
  return claim;
}

void Topups::ScheduleOn(Background& background) {
  if (!rpc_) return;
  background.Add({.name = "topups.poll",
                  .every = std::chrono::milliseconds(options_.loop_ms),
                  .pass = [this] { return Poll().status(); }});
}

}  // namespace gpunex::platform::topups
