#include "platform/idempotency/idempotency.h"

#include "common/log.h"
#include "platform/idempotency/idempotency_store.h"

namespace gpunex::platform::idempotency {

Status ValidateKey(std::string_view key) {
  if (key.empty() || key.size() > 255)
    return FieldError("Idempotency-Key", "must be 1 to 255 characters");
  for (unsigned char c : key) {
    if (c < 0x21 || c > 0x7e)
      return FieldError("Idempotency-Key", "must be printable ASCII without spaces");
  }
  return Status::Ok();
}

StatusOr<Claim> Idempotency::Begin(const std::string& user_id, const std::string& key,
                                   const std::string& request_hash) {
  GPUNEX_RETURN_IF_ERROR(ValidateKey(key));
  const Timestamp deadline = options_.clock->Now() + options_.wait;
  while (true) {
    const Timestamp now = options_.clock->Now();
    std::optional<Claim> claim;
    bool busy = false;
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      IdempotencyStore s(tx);
      claim.reset();
      busy = false;
      GPUNEX_ASSIGN_OR_RETURN(std::optional<KeyRow> row, s.Find(user_id, key));
      if (row && row->expires_at >= now) {
        if (row->request_hash != request_hash) {
          return FieldError("Idempotency-Key", "was already used with a different request");
        }
        if (row->state == KeyState::kDone) {
          claim = Claim{true,
                        {static_cast<int>(row->response_status), row->response_content_type,
                         row->response_body},
                        row->lease_until};
          return Status::Ok();
        }
        if (row->lease_until > now) {
          busy = true;
          return Status::Ok();
        }
        // The first attempt died without an answer: this one takes over.
      }
      KeyRow fresh{user_id, key, request_hash, KeyState::kInProgress, 0,
                   "",      "",  now,          now + options_.lease,  now + options_.retention};
      GPUNEX_RETURN_IF_ERROR(s.Put(fresh));
      claim = Claim{false, {}, fresh.lease_until};
      return Status::Ok();
    }));
    if (claim) return *claim;
    if (!busy || options_.clock->Now() >= deadline) {
      return FailedPrecondition(
          "a request with this Idempotency-Key is still in progress; retry later");
    }
    std::this_thread::sleep_for(options_.poll);
  }
}

Status Idempotency::Complete(const std::string& user_id, const std::string& key, const Claim& claim,
                             const StoredResponse& response) {
  return db_.Transact([&](store::Tx& tx) {
    // A claim whose lease ran out may have been taken over: then that attempt's answer counts.
    return IdempotencyStore(tx)
        .Complete(user_id, key, claim.lease_until, response.status, response.content_type,
                  response.body)
        .status();
  });
}

Status Idempotency::Abandon(const std::string& user_id, const std::string& key,
                            const Claim& claim) {
  return db_.Transact(
      [&](store::Tx& tx) { return IdempotencyStore(tx).Delete(user_id, key, claim.lease_until); });
}

void Idempotency::ScheduleOn(Background& background) {
  background.Add(
      {.name = "idempotency.sweep",
       .every = std::chrono::duration_cast<std::chrono::milliseconds>(options_.sweep_interval),
       .pass = [this] { return Sweep().status(); }});
}

StatusOr<int64_t> Idempotency::Sweep() {
  int64_t n = 0;
  const Timestamp now = options_.clock->Now();
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(n, IdempotencyStore(tx).DeleteExpired(now));
    return Status::Ok();
  }));
  return n;
}

}  // namespace gpunex::platform::idempotency
