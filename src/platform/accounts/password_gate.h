// How many password hashes (Argon2id: tens of milliseconds and 64 MiB each) run at once,
// and how many requests may wait for one (issue: a sign-up flood slowed the whole API).
// A request beyond both is refused at once (kResourceExhausted: HTTP 429, retry in a
// second), so a flood holds at most `concurrent + waiting` request workers and
// `concurrent` cores; the other requests keep their speed.
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>

#include "common/status.h"
#include "common/thread_annotations.h"

namespace gpunex::platform::accounts {

class PasswordGate {
 public:
  PasswordGate(int concurrent, int waiting, std::chrono::milliseconds max_wait);

  // Holds a place while it lives.
  class Pass {
   public:
    explicit Pass(PasswordGate* gate) : gate_(gate) {}
    Pass(Pass&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&&) = delete;
    ~Pass();

   private:
    PasswordGate* gate_;
  };

  // The message of a refusal (HTTP answers it with Retry-After: 1).
  static constexpr std::string_view kBusy =
      "too many password checks at once on this server; retry in a second";

  // A place to hash now, after waiting up to max_wait behind the others when all are
  // taken and fewer than `waiting` wait; kResourceExhausted otherwise.
  StatusOr<Pass> Enter() EXCLUDES(mu_);

 private:
  void Leave() EXCLUDES(mu_);

  const int concurrent_;
  const int waiting_;
  const std::chrono::milliseconds max_wait_;
  Mutex mu_;
  CondVar cv_;
  int running_ GUARDED_BY(mu_) = 0;
  int queued_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpunex::platform::accounts
