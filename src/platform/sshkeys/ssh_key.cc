#include "platform/sshkeys/ssh_key.h"

#include <sodium.h>

#include <array>
#include <cstdint>
#include <optional>

#include "common/json.h"

namespace gpunex::platform::sshkeys {

namespace {

// Reads the SSH wire format (RFC 4251 §5): uint32 lengths in network order, then bytes.
class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}

  std::optional<std::string_view> String() {
    if (data_.size() < 4) return std::nullopt;
    const uint32_t n = (uint32_t{static_cast<unsigned char>(data_[0])} << 24) |
                       (uint32_t{static_cast<unsigned char>(data_[1])} << 16) |
                       (uint32_t{static_cast<unsigned char>(data_[2])} << 8) |
                       uint32_t{static_cast<unsigned char>(data_[3])};
    if (data_.size() - 4 < n) return std::nullopt;
    std::string_view s = data_.substr(4, n);
    data_.remove_prefix(4 + n);
    return s;
  }
  bool AtEnd() const { return data_.empty(); }

 private:
  std::string_view data_;
};

// The size in bits of a positive mpint (RFC 4251 §5), or nullopt for a negative or
// non-minimal one.
std::optional<int> MpintBits(std::string_view m) {
  if (m.empty()) return 0;
  const auto first = static_cast<unsigned char>(m[0]);
  if (first & 0x80) return std::nullopt;  // negative
  if (first == 0) {
    // A leading zero only keeps the sign bit clear.
    if (m.size() == 1 || !(static_cast<unsigned char>(m[1]) & 0x80)) return std::nullopt;
    m.remove_prefix(1);
  }
  int bits = static_cast<int>(m.size()) * 8;
  for (auto top = static_cast<unsigned char>(m[0]); !(top & 0x80); top <<= 1) --bits;
  return bits;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string out(text.size() * 3 / 4 + 3, '\0');
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), nullptr, &len, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != text.data() + text.size()) {
    return std::nullopt;
  }
  out.resize(len);
  return out;
}

std::string Fingerprint(std::string_view blob) {
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest{};
  crypto_hash_sha256(digest.data(), reinterpret_cast<const unsigned char*>(blob.data()),
                     blob.size());
  std::string b64(
      sodium_base64_ENCODED_LEN(digest.size(), sodium_base64_VARIANT_ORIGINAL_NO_PADDING), '\0');
  sodium_bin2base64(b64.data(), b64.size(), digest.data(), digest.size(),
                    sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
  b64.resize(b64.find('\0'));
  return "SHA256:" + b64;
}

struct Curve {
  std::string_view type, name;
  size_t point_bytes;  // uncompressed: 0x04 || X || Y
  int bits;
};
constexpr std::array<Curve, 3> kCurves = {{
    {"ecdsa-sha2-nistp256", "nistp256", 65, 256},
    {"ecdsa-sha2-nistp384", "nistp384", 97, 384},
    {"ecdsa-sha2-nistp521", "nistp521", 133, 521},
}};

// The key size of a well-formed blob of `type`, or the reason it is not one.
StatusOr<int> CheckBlob(std::string_view type, std::string_view blob, std::string_view field) {
  const std::string bad = "is not a well-formed " + std::string(type) + " key";
  WireReader r(blob);
  auto blob_type = r.String();
  if (!blob_type) return FieldError(std::string(field), bad);
  if (*blob_type != type) {
    return FieldError(std::string(field), "says " + std::string(type) + " but holds a " +
                                              std::string(*blob_type) + " key");
  }
  int bits = 0;
  if (type == "ssh-ed25519") {
    auto key = r.String();
    if (!key || key->size() != crypto_sign_ed25519_PUBLICKEYBYTES) {
      return FieldError(std::string(field), bad);
    }
    bits = 256;
  } else if (type == "ssh-rsa") {
    auto e = r.String();
    auto n = r.String();
    if (!e || !n) return FieldError(std::string(field), bad);
    auto e_bits = MpintBits(*e);
    auto n_bits = MpintBits(*n);
    if (!e_bits || !n_bits || *e_bits < 2 || !(static_cast<unsigned char>(e->back()) & 1)) {
      return FieldError(std::string(field), bad);
    }
    bits = *n_bits;
    if (bits < kMinRsaBits) {
      return FieldError(std::string(field), "is an RSA key of " + std::to_string(bits) +
                                                " bits; RSA keys need at least " +
                                                std::to_string(kMinRsaBits) +
                                                " (or use ed25519: ssh-keygen -t ed25519)");
    }
    if (bits > kMaxRsaBits) {
      return FieldError(std::string(field),
                        "is an RSA key of more than " + std::to_string(kMaxRsaBits) + " bits");
    }
  } else {
    const Curve* curve = nullptr;
    for (const Curve& c : kCurves) {
      if (c.type == type) curve = &c;
    }
    auto name = r.String();
    auto point = r.String();
    if (!curve || !name || *name != curve->name || !point || point->size() != curve->point_bytes ||
        (*point)[0] != '\x04') {
      return FieldError(std::string(field), bad);
    }
    bits = curve->bits;
  }
  if (!r.AtEnd()) return FieldError(std::string(field), bad);
  return bits;
}

bool Accepted(std::string_view type) {
  if (type == "ssh-ed25519" || type == "ssh-rsa") return true;
  for (const Curve& c : kCurves) {
    if (c.type == type) return true;
  }
  return false;
}

}  // namespace

StatusOr<PublicKey> ParsePublicKey(std::string_view line, std::string_view field) {
  const std::string f(field);
  if (line.size() > kMaxPublicKeyChars) {
    return FieldError(f, "must be at most " + std::to_string(kMaxPublicKeyChars) + " characters");
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) {
    line.remove_suffix(1);
  }
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (line.empty()) return FieldError(f, "is required");
  if (line.starts_with("-----BEGIN")) {
    return FieldError(f,
                      "is a private key: paste the public key (the .pub file) instead, "
                      "and keep the private key to yourself");
  }
  if (line.find_first_of("\n\r") != std::string_view::npos) {
    return FieldError(f, "must be one key on one line");
  }
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) {
    return FieldError(f, "must be an OpenSSH public key: \"ssh-ed25519 AAAA... comment\"");
  }
  PublicKey key;
  key.type = std::string(line.substr(0, sp));
  std::string_view rest = line.substr(sp + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const size_t sp2 = rest.find(' ');
  key.base64 = std::string(rest.substr(0, sp2));
  if (sp2 != std::string_view::npos) {
    std::string_view comment = rest.substr(sp2 + 1);
    while (!comment.empty() && comment.front() == ' ') comment.remove_prefix(1);
    key.comment = std::string(comment);
  }
  if (key.type == "ssh-dss") {
    return FieldError(f,
                      "is a DSA key, which OpenSSH no longer accepts: use ed25519 "
                      "(ssh-keygen -t ed25519)");
  }
  if (!Accepted(key.type)) {
    return FieldError(f, "must be an ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa key");
  }
  auto blob = DecodeBase64(key.base64);
  if (!blob) return FieldError(f, "is not a well-formed " + key.type + " key (bad base64)");
  GPUNEX_ASSIGN_OR_RETURN(key.bits, CheckBlob(key.type, *blob, field));
  if (!IsCleanText(key.comment, false)) {
    return FieldError(f, "has control characters in its comment");
  }
  key.fingerprint = Fingerprint(*blob);
  return key;
}

}  // namespace gpunex::platform::sshkeys
