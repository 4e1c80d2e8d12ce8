// The SSH gateway's host key (issue 26): an Ed25519 key made once, the first time a
// gpunexd with the gateway starts, and kept in the database, so that every restart and
// every instance of a cluster on one database present the same key, and customers'
// known_hosts stay true.
//
// Thread-safety: free functions; each call is one transaction.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::sshgate {

struct HostKey {
  // The private key, in OpenSSH's format (what ssh-keygen writes), for the gateway only.
  std::string private_key;
  // "ssh-ed25519 AAAA...": the line a known_hosts file takes after the host.
  std::string public_key;
  // "SHA256:...", as `ssh-keygen -l` and OpenSSH's first-connection prompt print it.
  std::string fingerprint;
};

// The platform's host key: the one kept, or, on the first call ever, a new one, kept
// before it is returned (when two instances start at once, both return the one that was
// kept first).
StatusOr<HostKey> LoadOrCreateHostKey(store::Database& db, const Clock& clock);

// The public half and fingerprint of an OpenSSH private key; kInvalidArgument when it is
// none.
StatusOr<HostKey> HostKeyOf(const std::string& private_key);

}  // namespace gpunex::platform::sshgate
