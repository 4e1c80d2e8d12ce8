#include "platform/accounts/password_gate.h"

namespace gpunex::platform::accounts {

PasswordGate::PasswordGate(int concurrent, int waiting, std::chrono::milliseconds max_wait)
    : concurrent_(concurrent < 1 ? 1 : concurrent),
      waiting_(waiting < 0 ? 0 : waiting),
      max_wait_(max_wait) {}

PasswordGate::Pass::~Pass() {
  if (gate_) gate_->Leave();
}

StatusOr<PasswordGate::Pass> PasswordGate::Enter() {
  const Status busy = ResourceExhausted(std::string(kBusy));
  MutexLock lock(&mu_);
  if (running_ < concurrent_) {
    ++running_;
    return Pass(this);
  }
  if (queued_ >= waiting_) return busy;
  ++queued_;
  const auto deadline = std::chrono::steady_clock::now() + max_wait_;
  while (running_ >= concurrent_) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    cv_.WaitFor(&mu_, left);
  }
  --queued_;
  if (running_ >= concurrent_) return busy;
  ++running_;
  return Pass(this);
}

void PasswordGate::Leave() {
  {
    MutexLock lock(&mu_);
    --running_;
  }
  cv_.Signal();
}

}  // namespace gpunex::platform::accounts
