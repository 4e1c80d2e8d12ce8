#include "platform/solana/keypair.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace gpunex::platform::solana {
namespace {

void EnsureSodium() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) throw std::runtime_error("libsodium failed to initialise");
}

// The CLI writes 64 numbers of at most 3 digits: a file this long is not a key file.
constexpr size_t kMaxFileBytes = 4096;

std::string ModeText(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Wipes a buffer that held secret material when it goes out of scope.
class Wiped {
 public:
  Wiped(void* p, size_t n) : p_(p), n_(n) {}
  ~Wiped() { sodium_memzero(p_, n_); }
  Wiped(const Wiped&) = delete;
  Wiped& operator=(const Wiped&) = delete;

 private:
  void* p_;
  size_t n_;
};

// Parses "[n,n,...]" (64 integers 0..255, JSON whitespace anywhere between tokens) into
// `out`. Returns "" or what is wrong, without quoting the text.
std::string ParseKeyArray(std::string_view text, std::array<uint8_t, 64>* out) {
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) {
      ++i;
    }
  };
  skip_ws();
  if (i >= text.size() || text[i] != '[') return "it does not start with '['";
  ++i;
  for (size_t n = 0; n < 64; ++n) {
    skip_ws();
    if (n > 0) {
      if (i < text.size() && text[i] == ']') {
        return "it holds " + std::to_string(n) + " numbers, not 64";
      }
      if (i >= text.size() || text[i] != ',') {
        return "a ',' is missing after number " + std::to_string(n);
      }
      ++i;
      skip_ws();
    }
    size_t start = i;
    unsigned value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 4) {
      value = value * 10 + static_cast<unsigned>(text[i] - '0');
      ++i;
    }
    if (i == start) return "element " + std::to_string(n) + " is not an integer";
    if (i - start > 1 && text[start] == '0') {
      return "element " + std::to_string(n) + " has a leading zero";
    }
    if (value > 255 || (i < text.size() && text[i] >= '0' && text[i] <= '9')) {
      return "element " + std::to_string(n) + " is not between 0 and 255";
    }
    if (i < text.size() && (text[i] == '.' || text[i] == 'e' || text[i] == 'E')) {
      return "element " + std::to_string(n) + " is not an integer";
    }
    (*out)[n] = static_cast<uint8_t>(value);
  }
  skip_ws();
  if (i < text.size() && text[i] == ',') return "it holds more than 64 numbers";
  if (i >= text.size() || text[i] != ']') return "it does not end with ']' after 64 numbers";
  ++i;
  skip_ws();
  if (i != text.size()) return "there is text after the closing ']'";
  return "";
}

}  // namespace

StatusOr<Keypair> LoadKeypairFile(const std::string& path) {
  EnsureSodium();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return FailedPrecondition("cannot open the keypair file " + path + ": " + std::strerror(errno));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return FailedPrecondition("cannot stat the keypair file " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return FailedPrecondition("the keypair file " + path + " is not a regular file");
  }
  mode_t perms = st.st_mode & 07777;
  if (perms != 0600 && perms != 0400) {
    return FailedPrecondition("the keypair file " + path + " has mode " + ModeText(perms) +
                              "; it must be readable by its owner only (chmod 600 " + path + ")");
  }
  if (static_cast<size_t>(st.st_size) > kMaxFileBytes) {
    return InvalidArgument("the keypair file " + path +
                           " is not a Solana keypair file: it is larger than " +
                           std::to_string(kMaxFileBytes) + " bytes");
  }
  std::array<char, kMaxFileBytes + 1> buf;
  Wiped wipe_buf(buf.data(), buf.size());
  size_t len = 0;
  while (len < buf.size()) {
    ssize_t n = ::read(fd, buf.data() + len, buf.size() - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return FailedPrecondition("cannot read the keypair file " + path + ": " +
                                std::strerror(errno));
    }
    if (n == 0) break;
    len += static_cast<size_t>(n);
  }
  if (len > kMaxFileBytes) {
    return InvalidArgument("the keypair file " + path +
                           " is not a Solana keypair file: it is larger than " +
                           std::to_string(kMaxFileBytes) + " bytes");
  }
  Keypair kp;
  std::string why = ParseKeyArray(std::string_view(buf.data(), len), &kp.secret);
  if (!why.empty()) {
    sodium_memzero(kp.secret.data(), kp.secret.size());
    return InvalidArgument("the keypair file " + path +
                           " is not a Solana keypair file (a JSON array of 64 integers "
                           "0..255): " +
                           why);
  }
  Keypair derived = KeypairFromSeed(std::span<const uint8_t, 32>(kp.secret.data(), 32));
  bool matches = sodium_memcmp(derived.public_key.data(), kp.secret.data() + 32, 32) == 0;
  sodium_memzero(kp.secret.data(), kp.secret.size());
  if (!matches) {
    sodium_memzero(derived.secret.data(), derived.secret.size());
    return InvalidArgument("the keypair file " + path +
                           " is inconsistent: its last 32 bytes are not the public key of "
                           "its first 32");
  }
  return derived;
}

Keypair GenerateKeypair() {
  EnsureSodium();
  Keypair kp;
  crypto_sign_keypair(kp.public_key.data(), kp.secret.data());
  return kp;
}

Keypair KeypairFromSeed(std::span<const uint8_t, 32> seed) {
  EnsureSodium();
  Keypair kp;
  crypto_sign_seed_keypair(kp.public_key.data(), kp.secret.data(), seed.data());
  return kp;
}

Status WriteKeypairFile(const std::string& path, const Keypair& keypair) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      return AlreadyExists("the keypair file " + path + " exists; it is never overwritten");
    }
    return FailedPrecondition("cannot create the keypair file " + path + ": " +
                              std::strerror(errno));
  }
  std::string text = "[";
  for (size_t i = 0; i < keypair.secret.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(keypair.secret[i]);
  }
  text += ']';
  Wiped wipe_text(text.data(), text.size());
  auto fail = [&](const char* what) {
    std::string err = std::strerror(errno);
    ::close(fd);
    ::unlink(path.c_str());
    return FailedPrecondition(std::string("cannot ") + what + " the keypair file " + path + ": " +
                              err);
  };
  // The umask cannot widen 0600, but a default ACL could: set it explicitly.
  if (::fchmod(fd, 0600) != 0) return fail("chmod");
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("sync");
  if (::close(fd) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(path.c_str());
    return FailedPrecondition("cannot close the keypair file " + path + ": " + err);
  }
  return Status::Ok();
}

Signature Sign(const Keypair& keypair, std::span<const uint8_t> message) {
  EnsureSodium();
  Signature sig;
  crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), keypair.secret.data());
  return sig;
}

bool Verify(const Pubkey& key, std::span<const uint8_t> message, const Signature& signature) {
  EnsureSodium();
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(),
                                     key.data()) == 0;
}

}  // namespace gpunex::platform::solana
