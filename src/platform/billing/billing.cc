#include "platform/billing/billing.h"

#include "common/ids.h"
#include "common/json.h"

namespace gpunex::platform::billing {

StatusOr<CreditResult> Billing::Credit(const accounts::Principal& p, const CreditRequest& req) {
  if (!p.IsAdmin()) return PermissionDenied("only operators credit balances");
  FieldErrors errors;
  if (req.user_id.empty()) errors.emplace("user_id", "is required");
  if (req.amount.micros() < 1 || req.amount.micros() > kMaxCreditMicro) {
    errors.emplace("amount_micro", "must be from 1 to " + std::to_string(kMaxCreditMicro) +
                                       " micro-USDC (1,000,000 USDC)");
  }
  if (req.reference.empty() || req.reference.size() > kMaxReference ||
      !IsCleanText(req.reference, false)) {
    errors.emplace("reference", "must be one line of 1 to 200 characters (the wire or invoice)");
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  const Timestamp now = clock_->Now();
  CreditResult out;
  Transfer& t = out.transfer;
  t.id = req.idempotency_key.empty() ? NewId("cr") : "cr_" + p.user.id + "_" + req.idempotency_key;
  t.kind = std::string(kOperatorCredit);
  t.debit_account = std::string(kWorldOperator);
  t.credit_account = CustomerAccount(req.user_id);
  t.amount = req.amount;
  t.reference = req.reference;
  t.at = now;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    auto user = accounts::LoadUser(tx, req.user_id);
    if (!user.ok()) {
      if (user.status().code() == StatusCode::kNotFound)
        return FieldError("user_id", "is not a user of this platform");
      return user.status();
    }
    // A repeat of a credit whose answer was lost: the first one stands.
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Transfer> first, FindTransfer(tx, t.id));
    if (first) {
      if (first->credit_account != t.credit_account || first->amount != t.amount ||
          first->reference != t.reference) {
        return FieldError("Idempotency-Key", "was used for another credit");
      }
      t = *first;
      GPUNEX_ASSIGN_OR_RETURN(out.balance, Balance(tx, t.credit_account));
      return Status::Ok();
    }
    GPUNEX_RETURN_IF_ERROR(Post(tx, {t}).status());
    GPUNEX_ASSIGN_OR_RETURN(out.balance, Balance(tx, t.credit_account));
    return accounts::Audit(
        tx, now, p.user.id, "balance.credited", req.user_id, p.ip,
        {{"amount_micro", std::to_string(req.amount.micros())}, {"transfer_id", t.id}});
  }));
  return out;
}

StatusOr<Page<Entry>> Billing::Statement(const accounts::Principal& p, Timestamp from, Timestamp to,
                                         const PageRequest& page) {
  Page<Entry> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out,
                            billing::Statement(tx, CustomerAccount(p.user.id), from, to, page));
    return Status::Ok();
  }));
  return out;
}

StatusOr<CheckResult> Billing::Check(const accounts::Principal& p) {
  if (!p.IsAdmin()) return PermissionDenied("only operators check the ledger");
  CheckResult out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, billing::Check(tx));
    return Status::Ok();
  }));
  return out;
}

StatusOr<int64_t> Billing::ReleaseEarnings(Duration hold) {
  const Timestamp now = clock_->Now();
  int64_t n = 0;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(n, billing::ReleaseEarnings(tx, now - hold, now));
    return Status::Ok();
  }));
  return n;
}

}  // namespace gpunex::platform::billing
