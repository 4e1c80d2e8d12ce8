#include "platform/solana/address.h"

#include <openssl/bn.h>
#include <sodium.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace gpunex::platform::solana {
namespace {

constexpr char kAlphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

// Digit value of a base58 character, -1 when it is not one.
int DigitOf(char c) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t;
    t.fill(-1);
    for (int i = 0; i < 58; ++i) t[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
    return t;
  }();
  return table[static_cast<uint8_t>(c)];
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "gpunex solana: %s\n", what);
  std::abort();
}

Pubkey Constant(std::string_view b58) {
  auto bytes = DecodeBase58(b58);
  if (!bytes || bytes->size() != 32) Die("bad program id constant");
  Pubkey key;
  std::copy(bytes->begin(), bytes->end(), key.begin());
  return key;
}

// --- the curve check, over OpenSSL BIGNUM (public data: no need for constant time).
struct BnDeleter {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
struct BnCtxDeleter {
  void operator()(BN_CTX* c) const { BN_CTX_free(c); }
};
using Bn = std::unique_ptr<BIGNUM, BnDeleter>;

Bn NewBn() {
  Bn b(BN_new());
  if (!b) Die("out of memory (BN_new)");
  return b;
}

Bn HexBn(const char* hex) {
  BIGNUM* b = nullptr;
  if (BN_hex2bn(&b, hex) == 0) Die("bad curve constant");
  return Bn(b);
}

// Field constants of curve25519.
struct Curve {
  Bn p = HexBn("7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffed");
  Bn d = HexBn("52036cee2b6ffe738cc740797779e89800700a4d4141d8ab75eb4dca135978a3");
  Bn half = HexBn("3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff6");  // (p-1)/2
  // y of the points of order 8 (and p minus it); 0, 1 and p-1 are the other small orders.
  Bn y8 = HexBn("05fc536d880238b13933c6d305acdfd5f098eff289f4c345b027b2c28f95e826");
  Bn y8_neg = HexBn("7a03ac9277fdc74ec6cc392cfa53202a0f67100d760b3cba4fd84d3d706a17c7");
  Bn p_minus_1 = HexBn("7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffec");
};

const Curve& TheCurve() {
  static const Curve* c = new Curve();  // never destroyed: used from any thread at exit
  return *c;
}

// y = the key's low 255 bits (little-endian) reduced mod p, as CompressedEdwardsY does.
Bn ReducedY(const Pubkey& key, BN_CTX* ctx) {
  std::array<uint8_t, 32> be;
  std::reverse_copy(key.begin(), key.end(), be.begin());
  be[0] &= 0x7f;  // the sign bit of x
  Bn y(BN_bin2bn(be.data(), static_cast<int>(be.size()), nullptr));
  if (!y) Die("out of memory (BN_bin2bn)");
  if (BN_nnmod(y.get(), y.get(), TheCurve().p.get(), ctx) != 1) Die("BN_nnmod failed");
  return y;
}

std::unique_ptr<BN_CTX, BnCtxDeleter> NewCtx() {
  std::unique_ptr<BN_CTX, BnCtxDeleter> ctx(BN_CTX_new());
  if (!ctx) Die("out of memory (BN_CTX_new)");
  return ctx;
}

void Sha256Update(crypto_hash_sha256_state* st, std::span<const uint8_t> b) {
  crypto_hash_sha256_update(st, b.data(), b.size());
}

Status SeedError(const std::vector<std::span<const uint8_t>>& seeds) {
  if (seeds.size() > kMaxSeeds) {
    return InvalidArgument("a program address takes at most " + std::to_string(kMaxSeeds) +
                           " seeds, not " + std::to_string(seeds.size()));
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i].size() > kMaxSeedBytes) {
      return InvalidArgument("seed " + std::to_string(i) + " of a program address has " +
                             std::to_string(seeds[i].size()) + " bytes, more than " +
                             std::to_string(kMaxSeedBytes));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string Base58(std::span<const uint8_t> bytes) {
  size_t zeros = 0;
  while (zeros < bytes.size() && bytes[zeros] == 0) ++zeros;
  // Base-58 digits, least significant first; log(256)/log(58) < 1.37.
  std::vector<uint8_t> digits;
  digits.reserve((bytes.size() - zeros) * 138 / 100 + 1);
  for (size_t i = zeros; i < bytes.size(); ++i) {
    uint32_t carry = bytes[i];
    for (uint8_t& d : digits) {
      carry += static_cast<uint32_t>(d) << 8;
      d = static_cast<uint8_t>(carry % 58);
      carry /= 58;
    }
    while (carry > 0) {
      digits.push_back(static_cast<uint8_t>(carry % 58));
      carry /= 58;
    }
  }
  std::string out(zeros, '1');
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) out += kAlphabet[*it];
  return out;
}

std::optional<std::vector<uint8_t>> DecodeBase58(std::string_view s) {
  size_t ones = 0;
  while (ones < s.size() && s[ones] == '1') ++ones;
  std::vector<uint8_t> bytes;  // least significant first
  bytes.reserve((s.size() - ones) * 733 / 1000 + 1);
  for (size_t i = ones; i < s.size(); ++i) {
    int digit = DigitOf(s[i]);
    if (digit < 0) return std::nullopt;
    uint32_t carry = static_cast<uint32_t>(digit);
    for (uint8_t& b : bytes) {
      carry += static_cast<uint32_t>(b) * 58;
      b = static_cast<uint8_t>(carry & 0xff);
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push_back(static_cast<uint8_t>(carry & 0xff));
      carry >>= 8;
    }
  }
  std::vector<uint8_t> out(ones, 0);
  out.insert(out.end(), bytes.rbegin(), bytes.rend());
  return out;
}

std::string ToBase58(const Pubkey& key) { return Base58(key); }

StatusOr<Pubkey> ParsePubkey(std::string_view s, std::string_view field) {
  std::string f(field);
  if (s.empty()) return FieldError(f, "is required");
  if (s.size() > kMaxPubkeyChars) {
    return FieldError(f, "is not a Solana address: longer than " + std::to_string(kMaxPubkeyChars) +
                             " characters");
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (DigitOf(s[i]) >= 0) continue;
    auto c = static_cast<unsigned char>(s[i]);
    std::string shown;
    if (c > 0x20 && c < 0x7f) {
      shown = std::string("'") + static_cast<char>(c) + "'";
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      shown = std::string("byte ") + hex;
    }
    return FieldError(f, "is not a Solana address: " + shown + " at position " +
                             std::to_string(i + 1) +
                             " is not a base58 character (base58 has no 0, O, I or l)");
  }
  auto bytes = DecodeBase58(s);
  if (!bytes || bytes->size() != 32) {
    return FieldError(f, "is not a Solana address: it decodes to " +
                             std::to_string(bytes ? bytes->size() : 0) + " bytes, not 32");
  }
  Pubkey key;
  std::copy(bytes->begin(), bytes->end(), key.begin());
  return key;
}

bool IsOnCurve(const Pubkey& key) {
  const Curve& c = TheCurve();
  auto ctx = NewCtx();
  Bn y = ReducedY(key, ctx.get());
  Bn yy = NewBn(), u = NewBn(), v = NewBn(), w = NewBn(), r = NewBn();
  // u = y^2 - 1, v = d y^2 + 1; (x^2 = u/v has a root) <=> u·v is 0 or a square, since
  // v is never 0 (-1/d is not a square) and the Legendre symbol is multiplicative.
  bool ok = BN_mod_sqr(yy.get(), y.get(), c.p.get(), ctx.get()) == 1 &&
            BN_mod_sub(u.get(), yy.get(), BN_value_one(), c.p.get(), ctx.get()) == 1 &&
            BN_mod_mul(v.get(), yy.get(), c.d.get(), c.p.get(), ctx.get()) == 1 &&
            BN_mod_add(v.get(), v.get(), BN_value_one(), c.p.get(), ctx.get()) == 1 &&
            BN_mod_mul(w.get(), u.get(), v.get(), c.p.get(), ctx.get()) == 1;
  if (!ok) Die("BIGNUM arithmetic failed");
  if (BN_is_zero(w.get())) return true;
  if (BN_mod_exp(r.get(), w.get(), c.half.get(), c.p.get(), ctx.get()) != 1)
    Die("BN_mod_exp failed");
  return BN_is_one(r.get());
}

bool HasSmallOrder(const Pubkey& key) {
  const Curve& c = TheCurve();
  auto ctx = NewCtx();
  Bn y = ReducedY(key, ctx.get());
  return BN_is_zero(y.get()) || BN_is_one(y.get()) || BN_cmp(y.get(), c.p_minus_1.get()) == 0 ||
         BN_cmp(y.get(), c.y8.get()) == 0 || BN_cmp(y.get(), c.y8_neg.get()) == 0;
}

StatusOr<Pubkey> ParseWallet(std::string_view s, std::string_view field) {
  GPUNEX_ASSIGN_OR_RETURN(Pubkey key, ParsePubkey(s, field));
  if (!IsOnCurve(key)) {
    return FieldError(std::string(field),
                      "is not an ed25519 public key: it is a program-derived address or "
                      "another off-curve address that nobody can sign for (an associated "
                      "token account, perhaps: give the wallet's own address)");
  }
  if (HasSmallOrder(key)) {
    return FieldError(std::string(field),
                      "is not an ed25519 public key anyone can sign for: it is a point of "
                      "small order (such as the system program's address)");
  }
  return key;
}

StatusOr<Pubkey> CreateProgramAddress(const std::vector<std::span<const uint8_t>>& seeds,
                                      const Pubkey& program) {
  GPUNEX_RETURN_IF_ERROR(SeedError(seeds));
  static constexpr std::string_view kMarker = "ProgramDerivedAddress";
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  for (const auto& seed : seeds) Sha256Update(&st, seed);
  Sha256Update(&st, program);
  Sha256Update(&st, SeedBytes(kMarker));
  Pubkey out;
  crypto_hash_sha256_final(&st, out.data());
  if (IsOnCurve(out)) {
    return FailedPrecondition(
        "the seeds give an address on the ed25519 curve, not a program "
        "address (try another bump seed)");
  }
  return out;
}

std::pair<Pubkey, uint8_t> FindProgramAddress(const std::vector<std::span<const uint8_t>>& seeds,
                                              const Pubkey& program) {
  if (seeds.size() >= kMaxSeeds || !SeedError(seeds).ok()) {
    Die("FindProgramAddress: more than 15 seeds or a seed longer than 32 bytes");
  }
  std::vector<std::span<const uint8_t>> with_bump = seeds;
  uint8_t bump = 255;
  with_bump.emplace_back(&bump, 1);
  for (int b = 255; b >= 0; --b) {
    bump = static_cast<uint8_t>(b);
    auto address = CreateProgramAddress(with_bump, program);
    if (address.ok()) return {*address, bump};
  }
  Die("FindProgramAddress: no viable bump seed");
}

const Pubkey& SystemProgram() {
  static const Pubkey k = Constant("11111111111111111111111111111111");
  return k;
}
const Pubkey& TokenProgram() {
  static const Pubkey k = Constant("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
  return k;
}
const Pubkey& Token2022Program() {
  static const Pubkey k = Constant("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb");
  return k;
}
const Pubkey& AssociatedTokenProgram() {
  static const Pubkey k = Constant("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");
  return k;
}
const Pubkey& MemoProgram() {
  static const Pubkey k = Constant("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
  return k;
}

std::optional<std::string_view> WellKnownAddress(const Pubkey& key) {
  // The ids as the Solana SDK and the SPL declare them.
  static const std::vector<std::pair<Pubkey, std::string_view>> kKnown = [] {
    const std::pair<std::string_view, std::string_view> ids[] = {
        {"11111111111111111111111111111111", "the System program"},
        {"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "the Token program"},
        {"TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb", "the Token-2022 program"},
        {"ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL", "the Associated Token Account program"},
        {"MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr", "the Memo program"},
        {"Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", "the Memo program (v1)"},
        {"ComputeBudget111111111111111111111111111111", "the Compute Budget program"},
        {"AddressLookupTab1e1111111111111111111111111", "the Address Lookup Table program"},
        {"BPFLoader1111111111111111111111111111111111", "the BPF loader (v1)"},
        {"BPFLoader2111111111111111111111111111111111", "the BPF loader (v2)"},
        {"BPFLoaderUpgradeab1e11111111111111111111111", "the upgradeable BPF loader"},
        {"LoaderV411111111111111111111111111111111111", "the loader v4"},
        {"NativeLoader1111111111111111111111111111111", "the native loader"},
        {"Config1111111111111111111111111111111111111", "the Config program"},
        {"Stake11111111111111111111111111111111111111", "the Stake program"},
        {"StakeConfig11111111111111111111111111111111", "the stake config account"},
        {"Vote111111111111111111111111111111111111111", "the Vote program"},
        {"Feature111111111111111111111111111111111111", "the Feature program"},
        {"Ed25519SigVerify111111111111111111111111111", "the Ed25519 signature program"},
        {"KeccakSecp256k11111111111111111111111111111", "the secp256k1 signature program"},
        {"Secp256r1SigVerify1111111111111111111111111", "the secp256r1 signature program"},
        {"Sysvar1111111111111111111111111111111111111", "the sysvar owner"},
        {"SysvarC1ock11111111111111111111111111111111", "the Clock sysvar"},
        {"SysvarRent111111111111111111111111111111111", "the Rent sysvar"},
        {"SysvarFees111111111111111111111111111111111", "the Fees sysvar"},
        {"SysvarRecentB1ockHashes11111111111111111111", "the RecentBlockhashes sysvar"},
        {"Sysvar1nstructions1111111111111111111111111", "the Instructions sysvar"},
        {"SysvarEpochSchedu1e111111111111111111111111", "the EpochSchedule sysvar"},
        {"SysvarEpochRewards1111111111111111111111111", "the EpochRewards sysvar"},
        {"SysvarLastRestartS1ot1111111111111111111111", "the LastRestartSlot sysvar"},
        {"SysvarRewards111111111111111111111111111111", "the Rewards sysvar"},
        {"SysvarS1otHashes111111111111111111111111111", "the SlotHashes sysvar"},
        {"SysvarS1otHistory11111111111111111111111111", "the SlotHistory sysvar"},
        {"SysvarStakeHistory1111111111111111111111111", "the StakeHistory sysvar"},
        {"1nc1nerator11111111111111111111111111111111", "the incinerator (burns what it gets)"},
    };
    std::vector<std::pair<Pubkey, std::string_view>> out;
    for (const auto& [b58, name] : ids) out.emplace_back(Constant(b58), name);
    return out;
  }();
  for (const auto& [k, name] : kKnown) {
    if (k == key) return name;
  }
  return std::nullopt;
}

Pubkey AssociatedTokenAddress(const Pubkey& wallet, const Pubkey& mint,
                              const Pubkey& token_program) {
  return FindProgramAddress({wallet, token_program, mint}, AssociatedTokenProgram()).first;
}

}  // namespace gpunex::platform::solana
