#include "platform/solana/address.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include "platform/solana/keypair.h"
#include "platform/solana/testing/vectors.h"

namespace gpunex::platform::solana {
namespace {

using testing::Hex;
using testing::Key;

Pubkey FromHex(std::string_view hex) {
  auto bytes = Hex(hex);
  Pubkey k{};
  std::copy(bytes.begin(), bytes.end(), k.begin());
  return k;
}

TEST(Base58, MatchesReferenceVectors) {
  for (const auto& v : testing::kBase58) {
    auto bytes = Hex(v.hex);
    EXPECT_EQ(Base58(bytes), v.b58) << v.hex;
    auto back = DecodeBase58(v.b58);
    ASSERT_TRUE(back.has_value()) << v.b58;
    EXPECT_EQ(*back, bytes) << v.b58;
  }
}

TEST(Base58, RoundTripsRandomBytesWithLeadingZeros) {
  for (int n = 0; n < 200; ++n) {
    std::vector<uint8_t> b(static_cast<size_t>(n % 70));
    if (!b.empty()) randombytes_buf(b.data(), b.size());
    for (size_t i = 0; i < b.size() && i < static_cast<size_t>(n % 4); ++i) b[i] = 0;
    auto back = DecodeBase58(Base58(b));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, b);
  }
}

TEST(Base58, RejectsCharactersOutsideTheAlphabet) {
  for (std::string_view s : {"0", "O", "I", "l", "abc+", "a b", "\xc3\xa9"}) {
    EXPECT_FALSE(DecodeBase58(s).has_value()) << s;
  }
}

TEST(Address, ProgramIds) {
  EXPECT_EQ(SystemProgram(), Pubkey{});
  EXPECT_EQ(ToBase58(SystemProgram()), "11111111111111111111111111111111");
  EXPECT_EQ(ToBase58(TokenProgram()), "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
  EXPECT_EQ(ToBase58(Token2022Program()), "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb");
  EXPECT_EQ(ToBase58(AssociatedTokenProgram()), "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");
  EXPECT_EQ(ToBase58(MemoProgram()), "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
  EXPECT_TRUE(ParsePubkey(kMainnetUsdcMint, "mint").ok());
}

TEST(Address, WellKnownAddressesAreNamed) {
  for (const Pubkey* program : {&SystemProgram(), &TokenProgram(), &Token2022Program(),
                                &AssociatedTokenProgram(), &MemoProgram()}) {
    EXPECT_TRUE(WellKnownAddress(*program).has_value()) << ToBase58(*program);
  }
  EXPECT_EQ(WellKnownAddress(TokenProgram()), "the Token program");
  for (std::string_view id : {"Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
                              "ComputeBudget111111111111111111111111111111",
                              "BPFLoaderUpgradeab1e11111111111111111111111",
                              "SysvarRent111111111111111111111111111111111",
                              "1nc1nerator11111111111111111111111111111111"}) {
    auto key = ParsePubkey(id, "id");
    ASSERT_TRUE(key.ok()) << id;
    EXPECT_TRUE(WellKnownAddress(*key).has_value()) << id;
    EXPECT_EQ(ToBase58(*key), id);
  }
  // Anyone's wallet, the USDC mint and an associated token account are not programs.
  std::array<uint8_t, 32> seed{};
  seed.fill(7);
  const Pubkey wallet = KeypairFromSeed(seed).public_key;
  EXPECT_EQ(WellKnownAddress(wallet), std::nullopt);
  const Pubkey usdc = Key(kMainnetUsdcMint);
  EXPECT_EQ(WellKnownAddress(usdc), std::nullopt);
  EXPECT_EQ(WellKnownAddress(AssociatedTokenAddress(wallet, usdc)), std::nullopt);
}

TEST(Address, AssociatedTokenAddressesMatchSplToken) {
  for (const auto& v : testing::kAtas) {
    EXPECT_EQ(ToBase58(AssociatedTokenAddress(Key(v.wallet), Key(v.mint), Key(v.token_program))),
              v.ata)
        << v.wallet << " " << v.token_program;
  }
  // The default token program is the original one.
  EXPECT_EQ(ToBase58(AssociatedTokenAddress(Key(testing::kAtas[0].wallet), Key(kMainnetUsdcMint))),
            testing::kAtas[0].ata);
}

TEST(Address, FindProgramAddressMatchesWeb3) {
  for (const auto& v : testing::kPdas) {
    std::vector<std::vector<uint8_t>> storage;
    for (const char* s : v.seeds_hex) storage.push_back(Hex(s));
    std::vector<std::span<const uint8_t>> seeds(storage.begin(), storage.end());
    auto [address, bump] = FindProgramAddress(seeds, TokenProgram());
    EXPECT_EQ(ToBase58(address), v.address);
    EXPECT_EQ(bump, v.bump);
    EXPECT_FALSE(IsOnCurve(address));
  }
}

TEST(Address, CreateProgramAddressRefusesOnCurveHashes) {
  for (const auto& v : testing::kHelloMemoPdas) {
    uint8_t bump = static_cast<uint8_t>(v.bump);
    auto got = CreateProgramAddress({SeedBytes("hello"), {&bump, 1}}, MemoProgram());
    if (v.address == nullptr) {
      ASSERT_FALSE(got.ok()) << v.bump;
      EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
    } else {
      ASSERT_TRUE(got.ok()) << v.bump << " " << got.status().ToString();
      EXPECT_EQ(ToBase58(*got), v.address) << v.bump;
    }
  }
}

TEST(Address, CreateProgramAddressLimitsSeeds) {
  std::vector<uint8_t> long_seed(33, 1);
  auto too_long = CreateProgramAddress({long_seed}, TokenProgram());
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);

  std::vector<uint8_t> seed(32, 1);
  std::vector<std::span<const uint8_t>> seventeen(17, seed);
  auto too_many = CreateProgramAddress(seventeen, TokenProgram());
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), StatusCode::kInvalidArgument);
  // 16 seeds of 32 bytes are allowed (whether the hash is off the curve is chance).
  std::vector<std::span<const uint8_t>> sixteen(16, seed);
  auto at_limit = CreateProgramAddress(sixteen, TokenProgram());
  EXPECT_NE(at_limit.status().code(), StatusCode::kInvalidArgument);
}

TEST(Curve, MatchesWeb3OnRandomBytes) {
  int on = 0;
  for (const auto& v : testing::kCurve) {
    EXPECT_EQ(IsOnCurve(FromHex(v.hex)), v.on_curve) << v.hex;
    on += v.on_curve;
  }
  EXPECT_GT(on, 10);  // about half of all 32-byte strings decompress
}

// Why the check is not libsodium's crypto_core_ed25519_is_valid_point: it also requires
// the prime-order subgroup, so it calls most on-curve addresses invalid.
TEST(Curve, LibsodiumValidPointIsAStricterQuestion) {
  int on_curve = 0, sodium_valid = 0;
  for (const auto& v : testing::kCurve) {
    Pubkey k = FromHex(v.hex);
    if (!IsOnCurve(k)) {
      EXPECT_EQ(crypto_core_ed25519_is_valid_point(k.data()), 0);
      continue;
    }
    ++on_curve;
    sodium_valid += crypto_core_ed25519_is_valid_point(k.data());
  }
  EXPECT_LT(sodium_valid, on_curve);
}

TEST(Curve, SpecialEncodings) {
  Pubkey zero{};
  EXPECT_TRUE(IsOnCurve(zero));  // y = 0: (±sqrt(-1), 0), of order 4 (web3.js agrees)
  EXPECT_TRUE(HasSmallOrder(zero));
  Pubkey identity{};
  identity[0] = 1;  // (0, 1)
  EXPECT_TRUE(IsOnCurve(identity));
  EXPECT_TRUE(HasSmallOrder(identity));
  // The runtime (dalek) ignores the sign bit even for x = 0, and reduces y >= p; web3.js
  // (noble, RFC 8032) refuses both encodings. The runtime decides PDAs.
  Pubkey negative_zero = identity;
  negative_zero[31] = 0x80;
  EXPECT_TRUE(IsOnCurve(negative_zero));
  EXPECT_TRUE(HasSmallOrder(negative_zero));
  Pubkey all_ones;
  all_ones.fill(0xff);  // y = 2^255 - 1 ≡ 18 (mod p), which is a valid y
  EXPECT_TRUE(IsOnCurve(all_ones));
  EXPECT_FALSE(HasSmallOrder(all_ones));
  // p itself (non-canonical 0), p - 1 (order 2) and the order-8 y.
  Pubkey p = FromHex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
  EXPECT_TRUE(IsOnCurve(p));
  EXPECT_TRUE(HasSmallOrder(p));
  Pubkey minus_one = FromHex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
  EXPECT_TRUE(HasSmallOrder(minus_one));
  Pubkey order8 = FromHex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05");
  EXPECT_TRUE(IsOnCurve(order8));
  EXPECT_TRUE(HasSmallOrder(order8));
  // libsodium's blacklist of small-order encodings agrees.
  for (const Pubkey& k : {zero, identity, p, minus_one, order8}) {
    EXPECT_EQ(crypto_core_ed25519_is_valid_point(k.data()), 0);
  }
}

TEST(Curve, Ed25519PublicKeysAreOnAndPdasOff) {
  for (int i = 0; i < 50; ++i) {
    Keypair kp = GenerateKeypair();
    EXPECT_TRUE(IsOnCurve(kp.public_key));
    EXPECT_FALSE(HasSmallOrder(kp.public_key));
    EXPECT_FALSE(IsOnCurve(AssociatedTokenAddress(kp.public_key, Key(kMainnetUsdcMint))));
  }
  for (const auto& v : testing::kKeys) EXPECT_TRUE(IsOnCurve(Key(v.public_b58)));
}

TEST(ParsePubkey, Accepts32ByteAddresses) {
  auto k = ParsePubkey("9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj", "wallet");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(ToBase58(*k), "9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj");
  EXPECT_TRUE(ParsePubkey("11111111111111111111111111111111", "wallet").ok());
}

void ExpectFieldError(const StatusOr<Pubkey>& got, std::string_view field,
                      std::string_view needle) {
  ASSERT_FALSE(got.ok());
  Status st = got.status();
  EXPECT_EQ(st.code(), StatusCode::kValidationFailed);
  auto it = st.fields().find(std::string(field));
  ASSERT_NE(it, st.fields().end()) << st.ToString();
  EXPECT_NE(it->second.find(needle), std::string::npos) << it->second;
}

TEST(ParsePubkey, ErrorsNameTheField) {
  ExpectFieldError(ParsePubkey("", "payout.wallet"), "payout.wallet", "required");
  ExpectFieldError(ParsePubkey(std::string(45, 'A'), "payout.wallet"), "payout.wallet",
                   "longer than 44");
  ExpectFieldError(ParsePubkey("9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPU0Jtpj", "w"), "w",
                   "'0' at position 40");
  ExpectFieldError(ParsePubkey("9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtp\n", "w"), "w",
                   "byte 0x0a at position 44");
  // 31 and 33 bytes.
  std::vector<uint8_t> b31(31, 7), b33(33, 0);  // 33 zeros: 33 characters
  ExpectFieldError(ParsePubkey(Base58(b31), "w"), "w", "decodes to 31 bytes");
  ExpectFieldError(ParsePubkey(Base58(b33), "w"), "w", "decodes to 33 bytes");
  ExpectFieldError(ParsePubkey("1111", "w"), "w", "decodes to 4 bytes");
}

TEST(ParseWallet, RefusesAddressesNobodySignsFor) {
  EXPECT_TRUE(ParseWallet(testing::kKeys[0].public_b58, "wallet").ok());
  // An associated token account (a PDA): a common mistake for a wallet.
  ExpectFieldError(ParseWallet(testing::kAtas[0].ata, "wallet"), "wallet",
                   "not an ed25519 public key");
  ExpectFieldError(ParseWallet(testing::kPdas[1].address, "wallet"), "wallet",
                   "program-derived address");
  // The system program's id: on the curve, but of small order.
  ExpectFieldError(ParseWallet("11111111111111111111111111111111", "wallet"), "wallet",
                   "small order");
  ExpectFieldError(ParseWallet("", "wallet"), "wallet", "required");
}

}  // namespace
}  // namespace gpunex::platform::solana
