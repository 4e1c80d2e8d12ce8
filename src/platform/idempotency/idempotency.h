// Idempotent writes (Stripe's convention): a client that sends a state-changing request
// with an `Idempotency-Key` header may send it again — after a timeout, a lost answer, a
// crash of either side — and gets the first answer instead of a second effect.
//
// The first request with a key claims it: its user, the key and a hash of the request
// (method, path, body) are stored, and its answer once it has one; for 24 hours a repeat
// with the same hash gets that answer back. The same key with a different request is
// refused (kValidationFailed on "Idempotency-Key"). A repeat that arrives while the first
// is still running waits for its answer, up to a few seconds, and then gets
// kFailedPrecondition (HTTP 409) to retry later. A first attempt that died without an answer (its
// claim's lease ran out) is run again by the next repeat. Answers of 5xx are not kept: the request
// did not take effect as far as the client can tell, and a retry runs it again.
//
// What this does not cover: the window between a handler's commit and the storing of its
// answer. A request that must not take effect twice even then (rentals, top-ups) also
// records the key inside its own transaction (the next issues).
//
// The table is idempotency_store.h's. Thread-safety: thread-safe.
#pragma once

#include <string>

#include "common/background.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::idempotency {

struct IdempotencyOptions {
  Duration retention = std::chrono::hours(24);
  Duration lease = std::chrono::seconds(60);  // how long a first attempt holds its key
  Duration wait = std::chrono::seconds(5);    // how long a concurrent repeat waits
  Duration poll = std::chrono::milliseconds(20);
  Duration sweep_interval = std::chrono::minutes(10);  // of the scheduled sweep
  const Clock* clock = &SystemClock();
};

struct StoredResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// What a request with a key is to do.
struct Claim {
  bool replay = false;      // true: answer `response`; false: run the request, then Complete
  StoredResponse response;  // when replay
  Timestamp lease_until;    // when !replay: the claim's fencing token for Complete
};

// The key's syntax: 1 to 255 printable ASCII characters. A field error on
// "Idempotency-Key" otherwise.
Status ValidateKey(std::string_view key);

class Idempotency {
 public:
  explicit Idempotency(store::Database& db, IdempotencyOptions options = {})
      : db_(db), options_(options) {}
  Idempotency(const Idempotency&) = delete;
  Idempotency& operator=(const Idempotency&) = delete;

  // Schedules Sweep() every sweep_interval.
  void ScheduleOn(Background& background);

  StatusOr<Claim> Begin(const std::string& user_id, const std::string& key,
                        const std::string& request_hash);
  // Stores the answer of a claimed request (2xx-4xx).
  Status Complete(const std::string& user_id, const std::string& key, const Claim& claim,
                  const StoredResponse& response);
  // Gives the key up (the request failed with 5xx): a repeat runs it again.
  Status Abandon(const std::string& user_id, const std::string& key, const Claim& claim);
  // Forgets keys older than the retention. Returns how many.
  StatusOr<int64_t> Sweep();

 private:
  store::Database& db_;
  const IdempotencyOptions options_;
};

}  // namespace gpunex::platform::idempotency
