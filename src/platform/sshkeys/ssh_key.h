// OpenSSH public keys as customers paste them ("ssh-ed25519 AAAA... me@laptop"): the
// kinds the SSH gateway accepts, checked, with the fingerprint OpenSSH prints.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace gpunex::platform::sshkeys {

// The longest key line accepted (an RSA key of 16384 bits is about 2,800 characters).
inline constexpr size_t kMaxPublicKeyChars = 8192;
// RSA keys are accepted from this size (NIST SP 800-131A) up to kMaxRsaBits.
inline constexpr int kMinRsaBits = 2048;
inline constexpr int kMaxRsaBits = 16384;

struct PublicKey {
  std::string type;         // "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", ...
  std::string base64;       // the key blob as the line carries it
  std::string comment;      // what followed the blob ("me@laptop"), may be empty
  int bits = 0;             // 256 for ed25519, the curve's size, the RSA modulus' size
  std::string fingerprint;  // "SHA256:..." as `ssh-keygen -l` prints it

  // "type base64": the line as an authorized_keys file and the gateway take it.
  std::string Line() const { return type + " " + base64; }
};

// Reads one public key line: ssh-ed25519, ecdsa-sha2-nistp256/384/521, or ssh-rsa of
// kMinRsaBits to kMaxRsaBits bits, its blob well formed and of the type the line names.
// A field error on `field` saying what is wrong otherwise (a private key pasted by
// mistake, DSA, a short RSA key, text that is not a key).
StatusOr<PublicKey> ParsePublicKey(std::string_view line, std::string_view field);

}  // namespace gpunex::platform::sshkeys
