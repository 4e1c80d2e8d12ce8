#include "platform/sshkeys/ssh_keys.h"

#include "common/ids.h"
#include "common/json.h"
#include "platform/sshkeys/ssh_key.h"

namespace gpunex::platform::sshkeys {

namespace {

std::string Trim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  size_t start = s.find_first_not_of(' ');
  return start == std::string::npos ? "" : s.substr(start);
}

// A name as lists show it: printable, at most kMaxNameChars characters.
Status CheckName(const std::string& name) {
  if (!IsCleanText(name, false)) return FieldError("name", "must not contain control characters");
  size_t chars = 0;
  for (char c : name) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++chars;
  }
  if (chars > kMaxNameChars) {
    return FieldError("name", "must be at most " + std::to_string(kMaxNameChars) + " characters");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> PublicKeyEnv(store::Tx& tx, const std::string& user_id, size_t max_chars) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<SshKey> keys, SshKeysStore(tx).OfUser(user_id));
  std::string out;
  for (const SshKey& k : keys) {
    const size_t more = k.public_key.size() + (out.empty() ? 0 : 1);
    if (out.size() + more > max_chars) break;
    if (!out.empty()) out += '\n';
    out += k.public_key;
  }
  return out;
}

StatusOr<std::vector<SshKey>> SshKeys::List(const std::string& user_id) {
  std::vector<SshKey> out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, SshKeysStore(tx).OfUser(user_id));
    return Status::Ok();
  }));
  return out;
}

StatusOr<SshKey> SshKeys::Add(const std::string& user_id, std::string name,
                              const std::string& public_key) {
  auto parsed = ParsePublicKey(public_key, "public_key");
  name = Trim(std::move(name));
  Status name_ok = CheckName(name);
  if (!parsed.ok() || !name_ok.ok()) {
    FieldErrors errors(name_ok.fields());
    if (!parsed.ok()) errors.merge(FieldErrors(parsed.status().fields()));
    return ValidationFailed(std::move(errors));
  }
  if (name.empty()) name = Trim(parsed->comment);
  if (name.empty() || !CheckName(name).ok()) name = parsed->type + " key";
  SshKey key{.id = NewId("ssh"),
             .user_id = user_id,
             .name = name,
             .type = parsed->type,
             .public_key = parsed->Line(),
             .fingerprint = parsed->fingerprint,
             .bits = parsed->bits,
             .created_at = options_.clock->Now()};
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    SshKeysStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<SshKey> taken, s.ByFingerprint(key.fingerprint));
    if (taken) {
      return AlreadyExists(taken->user_id == user_id
                               ? "this key is on your account already, as \"" + taken->name + "\""
                               : "this key is on another account; a key may be on one "
                                 "account only (make a new one: ssh-keygen -t ed25519)");
    }
    GPUNEX_ASSIGN_OR_RETURN(int64_t held, s.CountOfUser(user_id));
    if (held >= options_.max_per_account) {
      return FailedPrecondition("an account holds at most " +
                                std::to_string(options_.max_per_account) +
                                " SSH keys; remove one first");
    }
    return s.Insert(key);
  }));
  return key;
}

Status SshKeys::Remove(const std::string& user_id, const std::string& id) {
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(bool deleted, SshKeysStore(tx).Delete(user_id, id));
    if (!deleted) return NotFound("no SSH key " + id + " on your account");
    return Status::Ok();
  });
}

}  // namespace gpunex::platform::sshkeys
