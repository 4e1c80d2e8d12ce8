#include "platform/accounts/credential_cache.h"

#include <algorithm>
#include <atomic>

namespace gpunex::platform::accounts {

namespace {

std::atomic<uint64_t>& GenerationCounter() {
  static std::atomic<uint64_t> generation{0};
  return generation;
}

}  // namespace

uint64_t CredentialCache::Generation() {
  return GenerationCounter().load(std::memory_order_acquire);
}

void CredentialCache::ForgetAfterCommit(store::Tx& tx) {
  tx.AfterCommit([] { GenerationCounter().fetch_add(1, std::memory_order_acq_rel); });
}

std::optional<Principal> CredentialCache::Find(const std::string& token_hash, Timestamp now) {
  if (!enabled()) return std::nullopt;
  const uint64_t generation = Generation();
  MutexLock lock(&mu_);
  const auto it = entries_.find(token_hash);
  if (it == entries_.end()) return std::nullopt;
  if (it->second.generation != generation || now >= it->second.valid_until) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.principal;
}

void CredentialCache::Put(const std::string& token_hash, const Principal& p, Timestamp now,
                          Timestamp usable_until, uint64_t generation) {
  if (!enabled()) return;
  const Timestamp until = std::min(now + ttl_, usable_until);
  if (until <= now || generation != Generation()) return;
  MutexLock lock(&mu_);
  if (entries_.size() >= capacity_) entries_.clear();
  entries_[token_hash] = Entry{p, until, generation};
}

}  // namespace gpunex::platform::accounts
