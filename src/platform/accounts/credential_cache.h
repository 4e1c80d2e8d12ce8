// The credentials authenticated lately (sessions and API keys), so that most requests
// authenticate without reading the store: each entry is the principal a credential
// resolved to, kept under the SHA-256 of the secret (never the secret), for at most
// `ttl` and never past the moment the credential itself would stop working (a session's
// expiry or idle limit).
//
// Revocation: every change to credentials or roles this process commits (sessions and
// keys revoked, roles granted, passwords changed) moves a process-wide generation after
// its commit, and an entry of an older generation is not used: it takes effect at once
// on this instance. Another instance of a cluster forgets within `ttl` (AccountsOptions::
// credential_cache_ttl, 1 s by default), since its entries expire.
//
// Thread-safety: thread-safe (one mutex; a lookup copies the principal out).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/store/db.h"

namespace gpunex::platform::accounts {

class CredentialCache {
 public:
  CredentialCache(Duration ttl, size_t capacity) : ttl_(ttl), capacity_(capacity) {}

  // The principal `token_hash` resolved to, while it is valid at `now` and no credential
  // changed since; nullopt otherwise.
  std::optional<Principal> Find(const std::string& token_hash, Timestamp now) EXCLUDES(mu_);
  // Keeps `p` for `token_hash` until the earlier of now + ttl and `usable_until`, if the
  // generation is still `generation` (the one read before the store was asked). A full
  // cache starts again empty.
  void Put(const std::string& token_hash, const Principal& p, Timestamp now, Timestamp usable_until,
           uint64_t generation) EXCLUDES(mu_);

  bool enabled() const { return ttl_ > Duration::zero() && capacity_ > 0; }

  // The process-wide generation of credentials and roles.
  static uint64_t Generation();
  // Moves the generation once `tx` commits: what the cache holds is no longer used.
  static void ForgetAfterCommit(store::Tx& tx);

 private:
  struct Entry {
    Principal principal;
    Timestamp valid_until;
    uint64_t generation = 0;
  };
  const Duration ttl_;
  const size_t capacity_;
  Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ GUARDED_BY(mu_);
};

}  // namespace gpunex::platform::accounts
