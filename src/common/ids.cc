#include "common/ids.h"

#include <sodium.h>

#include <array>
#include <chrono>
#include <mutex>
#include <stdexcept>

namespace gpunex {
namespace {

void EnsureSodium() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) throw std::runtime_error("libsodium failed to initialise");
}

constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

}  // namespace

std::string NewId(std::string_view prefix) {
  EnsureSodium();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  // Within one millisecond the random part counts up from the last id, so that ids made
  // by this process sort in the order they were made.
  static std::mutex mu;
  static int64_t last_ms = -1;
  static std::array<unsigned char, 16> last;  // base-32 digits
  std::array<unsigned char, 16> r;
  {
    std::lock_guard g(mu);
    if (ms <= last_ms) {
      ms = last_ms;
      int i = 15;
      while (i >= 0 && last[i] == 31) last[i--] = 0;
      if (i >= 0) ++last[i];
    } else {
      last_ms = ms;
      randombytes_buf(last.data(), last.size());
      for (auto& c : last) c &= 31;
      last[0] &= 15;  // headroom so that counting up cannot wrap
    }
    r = last;
  }
  std::string id(prefix);
  id += '_';
  char t[10];
  for (int i = 9; i >= 0; --i) {
    t[i] = kCrockford[ms & 31];
    ms >>= 5;
  }
  id.append(t, 10);
  for (unsigned char c : r) id += kCrockford[c];
  return id;
}

std::string NewSecret(std::string_view prefix) {
  EnsureSodium();
  std::array<unsigned char, 32> r;
  randombytes_buf(r.data(), r.size());
  return std::string(prefix) + "_" +
         Base64UrlEncode(std::string_view(reinterpret_cast<const char*>(r.data()), r.size()));
}

std::string Sha256Hex(std::string_view data) {
  EnsureSodium();
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(out, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  char hex[crypto_hash_sha256_BYTES * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, out, sizeof out);
  return hex;
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  EnsureSodium();
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(key.data()),
                              key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(data.data()),
                                data.size());
  unsigned char out[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_final(&state, out);
  return {reinterpret_cast<const char*>(out), sizeof out};
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  EnsureSodium();
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string Base64UrlEncode(std::string_view data) {
  EnsureSodium();
  std::string out(sodium_base64_ENCODED_LEN(data.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING),
                  '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(data.data()),
                    data.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.size() - 1);  // drop the terminating NUL
  return out;
}

bool Base64UrlDecode(std::string_view in, std::string* out) {
  EnsureSodium();
  out->assign(in.size(), '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out->data()), out->size(), in.data(),
                        in.size(), nullptr, &len, nullptr,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0) {
    return false;
  }
  out->resize(len);
  return true;
}

}  // namespace gpunex
