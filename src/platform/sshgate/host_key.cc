#include "platform/sshgate/host_key.h"

#include <libssh/libssh.h>

#include <memory>

#include "platform/sshgate/host_key_store.h"
#include "platform/sshkeys/ssh_key.h"

namespace gpunex::platform::sshgate {

namespace {

struct KeyFree {
  void operator()(ssh_key k) const { ssh_key_free(k); }
};
using Key = std::unique_ptr<std::remove_pointer_t<ssh_key>, KeyFree>;

// libssh's strings are freed with ssh_string_free_char.
std::string Take(char* s) {
  std::string out = s ? s : "";
  ssh_string_free_char(s);
  return out;
}

StatusOr<std::string> NewPrivateKey() {
  ssh_key raw = nullptr;
  if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &raw) != SSH_OK) {
    return Internal("cannot make an Ed25519 host key");
  }
  Key key(raw);
  char* text = nullptr;
  if (ssh_pki_export_privkey_base64(key.get(), nullptr, nullptr, nullptr, &text) != SSH_OK) {
    return Internal("cannot write the host key");
  }
  return Take(text);
}

}  // namespace

StatusOr<HostKey> HostKeyOf(const std::string& private_key) {
  ssh_key raw = nullptr;
  if (ssh_pki_import_privkey_base64(private_key.c_str(), nullptr, nullptr, nullptr, &raw) !=
      SSH_OK) {
    return InvalidArgument("the kept SSH host key is not an OpenSSH private key");
  }
  Key key(raw);
  ssh_key pub_raw = nullptr;
  if (ssh_pki_export_privkey_to_pubkey(key.get(), &pub_raw) != SSH_OK) {
    return InvalidArgument("the SSH host key has no public half");
  }
  Key pub(pub_raw);
  char* b64 = nullptr;
  if (ssh_pki_export_pubkey_base64(pub.get(), &b64) != SSH_OK) {
    return InvalidArgument("cannot write the SSH host key's public half");
  }
  const std::string line =
      std::string(ssh_key_type_to_char(ssh_key_type(pub.get()))) + " " + Take(b64);
  GPUNEX_ASSIGN_OR_RETURN(sshkeys::PublicKey parsed, sshkeys::ParsePublicKey(line, "host_key"));
  return HostKey{
      .private_key = private_key, .public_key = parsed.Line(), .fingerprint = parsed.fingerprint};
}

StatusOr<HostKey> LoadOrCreateHostKey(store::Database& db, const Clock& clock) {
  std::optional<std::string> kept;
  GPUNEX_RETURN_IF_ERROR(db.Transact([&](store::Tx& tx) -> Status {
    HostKeyStore keys(tx);
    GPUNEX_ASSIGN_OR_RETURN(kept, keys.Kept());
    if (kept) return Status::Ok();
    GPUNEX_ASSIGN_OR_RETURN(std::string made, NewPrivateKey());
    return keys.KeepFirst(made, clock.Now());
  }));
  // Another instance may have kept its key first: the kept one is the platform's.
  if (!kept) {
    GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(kept, HostKeyStore(tx).Kept());
      return kept ? Status::Ok() : Internal("the SSH host key was not kept");
    }));
  }
  return HostKeyOf(*kept);
}

}  // namespace gpunex::platform::sshgate
