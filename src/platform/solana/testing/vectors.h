// Reference vectors made with @solana/web3.js 1.99 and @solana/spl-token 0.4 by
// testdata/web3_vectors.js: what gpunex computes must match them byte for byte. For tests only.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "platform/solana/address.h"
#include "platform/solana/keypair.h"

namespace gpunex::platform::solana::testing {

inline std::vector<uint8_t> Hex(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  }
  return out;
}

inline std::string ToHex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// A key known to be valid base58 of 32 bytes.
inline Pubkey Key(std::string_view b58) {
  auto k = ParsePubkey(b58, "key");
  EXPECT_TRUE(k.ok()) << b58;
  return k.ok() ? *k : Pubkey{};
}

// Seeds 1..32, 100..131 and 200..231 (Keypair.fromSeed): secret (seed ‖ public) and
// public key.
struct KeyVector {
  const char* secret_hex;
  const char* public_b58;
};
inline constexpr KeyVector kKeys[] = {
    {"0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
     "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664",
     "9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj"},
    {"6465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f80818283"
     "0bbc346a57667c380120bd9c7fd7e51d2c5fdfea37cd2f5bf405b2c6bf6f2d78",
     "nowAfiByViBTf7X9wiVVaoC7PM8R5r7DzQ8Exch3kGP"},
    {"c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7"
     "32b53e882e3daac180d7a5f6224d61b6401b43f901db09f0e4d84ce4e4a2718b",
     "4QwgLaqCPvWEN15SycNTqjk5EWBdzbhtdDPrkqxUUu7Q"}};
inline std::array<uint8_t, 32> Seed(int which) {
  std::array<uint8_t, 32> s;
  int start = which == 0 ? 1 : which * 100;
  for (int i = 0; i < 32; ++i) s[i] = static_cast<uint8_t>(start + i);
  return s;
}

struct Base58Vector {
  const char* hex;
  const char* b58;
};
inline constexpr Base58Vector kBase58[] = {
    {"", ""},
    {"00", "1"},
    {"00000001", "1112"},
    {"61", "2g"},
    {"ffff", "LUv"},
    {"717aa046d6dabf799a4202660375eff5d63eeb85b950106df691c6e48ff4cdd0",
     "8dyXDZQGuVWAd4ZaLuohF7weC6mvup5LrLodHPghG4Co"},
    {"0000e408ce7f3d0002f8fe8b", "11Dp4WHR6duUpg9x"}};

// getAssociatedTokenAddressSync(mint, wallet, false, token_program).
struct AtaVector {
  const char* wallet;
  const char* mint;
  const char* token_program;
  const char* ata;
};
inline constexpr AtaVector kAtas[] = {
    {"9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
     "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "FjCjyojZLVYVQ2dEdDKQx76msks96TdH9xqvc8BQ9UUx"},
    {"nowAfiByViBTf7X9wiVVaoC7PM8R5r7DzQ8Exch3kGP", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
     "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "HNaHWifhuif9EVT2JXXmra3yjgHZdvZb6kZQyGzfihjC"},
    {"9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
     "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
     "AHWqw6UbnmBi5MtTdkijNmBFZtBRj5WYk6Jz9AHWVs6T"}};

// PublicKey.findProgramAddressSync(seeds, TokenProgram).
struct PdaVector {
  std::vector<const char*> seeds_hex;
  const char* address;
  int bump;
};
inline const std::vector<PdaVector> kPdas = {
    {{}, "29aDZ12ST2mQkLeVfoeKkkm7WA83MCyiGU3Zf8MjDDGV", 255},
    {{"68656c6c6f"}, "4HB6s1bAiAPk8kxSatGd3U7bKArXXSoDfemfu23UZBdw", 254},
    {{"7061796f7574", "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664"},
     "HAkqzqUrLVmnqGmeJsdGRvfmCLidtMdw6VANFh8yEgc",
     253},
    {{"0707070707070707070707070707070707070707070707070707070707070707", "01", ""},
     "36tXicu44Finwgib5KGXTzBMkmedUcEr2bW9kmUuC4hT",
     252}};

// PublicKey.createProgramAddressSync(["hello", [bump]], MemoProgram): nullptr where it
// throws (the hash is on the curve).
struct CpaVector {
  int bump;
  const char* address;
};
inline constexpr CpaVector kHelloMemoPdas[] = {
    {255, nullptr},
    {254, "21BJERTeJnwsavX2nbuNdqhehPLF8yLNjC7voMe5VoqH"},
    {253, nullptr},
    {252, "EjaKvaEPx29tc5CfYnDPA5rqAzqQ3SfAEfL84cUVDo47"},
    {251, "GLG55WctpXhn4rJ949xi21xYKbHQdgWY8GyNM8c1trah"},
    {250, nullptr},
    {249, "77Pq6oPZa4J8gU8Mjc43ouyJK7fABgB8vghMJrp92vpL"},
    {248, nullptr},
    {247, nullptr},
    {246, nullptr},
    {245, "hwmXgMV7nRTPHPnbk9frmwKMUAyu4o4akAArBLxj8WF"},
    {244, "2KoP7P2d9rzfoYSDEB4ECt3tNDUYNP3todmdM1Az4Q52"},
    {243, "AtekBwVGSMeQc5ECjQYEh1HQD8CVfw277ncqYjNxeQV6"},
    {242, nullptr},
    {241, "5TuUNUnTQE3d7WAH2zfuEDKRfwdkzH8YPn7ZmNqDx332"},
    {240, "62etZ7n1PWUZmtXEpayv4KL9nHwbnd4EkaJTyp4KVaHf"},
    {239, nullptr},
    {238, nullptr},
    {237, "J6eEorDSAwtTbf5LQP7eBPW5QXgdt122BSo7TWB1Z7CM"},
    {236, nullptr},
    {235, nullptr},
    {234, nullptr},
    {233, nullptr},
    {232, nullptr},
    {231, nullptr},
    {230, nullptr}};

// PublicKey.isOnCurve(sha256("curve" + i)) for i = 0..47.
struct CurveVector {
  const char* hex;
  bool on_curve;
};
inline constexpr CurveVector kCurve[] = {
    {"df299516b500f8bd486b00b46686c8c5229a94539ffff63664c0890934d1ef4f", false},
    {"1676e820cd6100968f689719f2af91083c36612aa3ad411cbfbdc30dc489ac2f", false},
    {"7b90b08d7676d79df0ce8c4768991529b25d908dde3b6b99f2ef900163e935a8", false},
    {"e2e7256451e07e1205f11ca96ef1c61b56e9c9eaa5ecb24d98c44bff08b5b5a5", true},
    {"f6866ca10994a5c324e8cdaf99a389f4a83883022861c615063248822d7ea7e8", true},
    {"4bf7fe7a76a5a9a514bffb0f92eeb3f2ddd8bd19f7ad4a3764b2c97f6ea5d4a4", true},
    {"785e43a85294d8ce1d8c1ffc7434c24e0d02613b7371030e4065b2b3ae481b61", false},
    {"c3b721b14c56a235bde44cbf1cac02cd3983c911538af7a3523bab1d3aa33fe7", false},
    {"4af11568fb0ce1971db851c4b730ef1947779e7fdd529231651fdb8c80ae1b88", true},
    {"2e2ea0ea5ae660156e1c7f46920a9639ca2b5ed23ec16c53c9869bf12fef71d0", true},
    {"e20562d9d4edea587b4ba7e46dc9964bf93ac19f19532b55248e3c14ec990b5f", true},
    {"b6e1e95b8b0e508a802fee67e53bc21371ce9968918df0eb5b93cb947eeb4281", true},
    {"15708589619ad5ff93eefdb6f7d092ea21b2ecc141698a631cffdd8fabb00f73", true},
    {"dbabc3dbb0750432d01728a145405cd456c9f0c9168d6d955584fd48d0440a79", false},
    {"f6a5d075c6908065f76f62a50241a24e6c2fd09cf1f049120c01b482569fe27e", true},
    {"05627e036389c9fbc11eb64bf4bbca553410a8ad876511e36adf5762388d02c7", false},
    {"528a7a67b722cc96df94b06d8a959e334a154ce6d3dff31f5caeccc9de52289b", false},
    {"df4ae98ad2d57485b446d078a33c30a95126df9d98758cf5e3f286f89ea60a02", false},
    {"6ad336d248c38b6eee0c5a5cdf67d792a9662d59059538cb2a003219fa814087", true},
    {"571829ad9f9d67651f7c7206057f1d75a21ccc7088358dd4d06ceedbf7864da3", true},
    {"9c02c1157c4cbb8a96d93f23930665364368ffa1f0806c6a95590daedc107d29", false},
    {"4ee39061aca3e41f9ada0adc21b2d0de55e7747639495933d6718e21be49cef5", true},
    {"6a8b1efe18c10dc3df6b517e1ac3242540351ba4722bb3be0b6cc9e65626758e", false},
    {"946f114bc6f9e1bff73998f97aa7e0d3354a0498126017625333f4c2d9f6b6c2", false},
    {"d4c15f2b3019ead978db371f45746372600b3211b0c45fde834920251f8c9c4f", false},
    {"2ef94db8fefb9c138da10038afc1e65f302def3756c609112b0807aeb1894128", true},
    {"5873c38e1a122f841fa6e1bfd56f085f44df5debf928e600e82e4efe913227b0", false},
    {"0bed618466fd51fb1cb8065faf519c67193ed64d183d4b6f57bb50553e6189e8", true},
    {"c62f62d1cf6932f6b600691f4239b8f14838fec1f772b103c62e78a60c752d9e", false},
    {"212af358c856f3fe2ac3af5321ecc6e8ae7e8b8d8c5ab2c4929daacd182ff3c4", false},
    {"f098dcc11efe5ecdd72894219e6a17cb2fc3a3bdcfab1131ddc38fb78d7740d3", false},
    {"bfd22034ad54d6e9f9a0d45f52531c1e302acb269ba26708665965acbca06d72", true},
    {"9a735daf0a4ece9cdfa7578b86738958a2b9e1815e520b47cf882dc3b800ad5c", true},
    {"d41c4a65d3baa3206e84dd19bf38bf9c6a110be27a2d7352c78466aded412be4", false},
    {"45d962e66b99209da24502068fd902b5a03526647b449c3f8bf459a02980cee1", false},
    {"7827b986ad28811cf581d003f0c5817dfa782bc4f85a68d8726876101fd255d1", false},
    {"2754ab6d35c922c760a90e4e6e8f799eccd1c729c019b110eb9ae0fb3a03bf8f", true},
    {"3befbaf90629e05df2ff494481958579da5cbf450e5549a94d75071068c66a42", false},
    {"a6650ec6a951dbd74a2c07b46ab89edcf8ecdf7a980a4b1517841be702e1d9f4", false},
    {"2fb7a5359a77f25a2e748c2441f3a93fa8db98837183cb9449bbd279953a273b", false},
    {"4c27f6941ea59a05735fd583fa9c1989720589f392c12a8c7f42424e799870d7", true},
    {"492f949dbd991ef636c52358e776a39dbe9712f146409c6cbd78244e24db2792", true},
    {"72c2cbecabb38d0938695e4662fd2cfc582a15f39ada7693ebce4ddf90d375c3", true},
    {"200ec7443bbcbf92d2b3b97e52eff75a025a593097362dd6c37970e841bd04b5", true},
    {"fa3569de91af7d9661e4bbe0c9bf9b3da89635e1142bf752af475da3cbd7bd7c", true},
    {"dfaffaa5add86e70577f8c5cbb47f88f8799ec07a867ac46b200533728033fac", true},
    {"fbe2a80b92cbe31d5bf8ec32eeef0939d882e91e09de9fd3f85b8958a1b6e521", false},
    {"91277988fec4a2e629f5a84d5062e328f019156c40ef58f8efffd727318bd15d", true}};

// sha256("blockhash").
inline constexpr std::string_view kBlockhash = "4ruaGCyaofHWGxPFXFVjuEJCdfBGZ2wCtEx6LzdzVqtV";

// Three instructions (CreateAssociatedTokenAccountIdempotent for kKeys[1]'s USDC account
// paid by the fee payer; TransferChecked of 1234567 micro-USDC from kKeys[0]'s USDC account,
// decimals 6; a Memo "gpunex payout po_01JD3XYZ" signed by kKeys[0]) compiled with
// TransactionMessage.compileToLegacyMessage and signed as a VersionedTransaction.
// kTx1: fee payer and owner kKeys[0]. kTx2: fee payer kKeys[2], owner kKeys[0].
inline constexpr std::string_view kMemo = "gpunex payout po_01JD3XYZ";
inline constexpr uint64_t kTxAmount = 1234567;
inline constexpr std::string_view kTx1Base64 =
    "AZsUIuSUYl5TThsc7ls0Y6g/gko2BxW/PDq/eoEF5yY2avwtrF3+2+EJtlnRqDNrwDeDBNcG/83c6w6GSooeEAIBAA"
    "YJebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmTzQdKsFfEFJIzSxRQDyEVwwqYQRqcLSbfDU8Jam6e9V9rT"
    "SVyPFwngGOHBRqYwtfgOla3lqdIGTJr2WeIf8WtRjJclj04kifG7PRApFI4NgwtaE5na/xCEBI572Nvp+FkLvDRqV2"
    "Z8OAEgvZx/1+UdLF/f6jfNL1v0BbLGv28teMb6evO+2606PWXzaqvJdDGxu+TC0vbg5HymAgNFL11hAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAG3fbh12Whk9nL4UbO63msHLSF7V9bN5E6jPWFfv8AqQVKU1qZKSEGTSTocW"
    "DaOHx8NbXdvJK7geQfqEBBBUSNOVv3J/mqxegJEVkQc/z5yCb0KIBBMcoIm+ujhpQhdJoDAwYAAQQFBgcBAQcEAgUB"
    "AAoMh9YSAAAAAAAGCAEAGWdwdW5leCBwYXlvdXQgcG9fMDFKRDNYWVo=";
inline constexpr std::string_view kTx1Signature =
    "46q9UgMhXUo1CRbvyHik8TGtKnJxXAh3NrSAAFPU6hFFQU8rnGdKVoQuEmDyyJU1YdjNkDHhzENxKNyho5gZRPSZ";
inline constexpr std::string_view kTx2Base64 =
    "AvZqK2GEvB7WzOl8qssl7tFFoNql/3FWxfytenrl0bTPUWmtfh2D06evU68jK4nv/Thl8DzmTFeq1S/AKlZq+geuaA"
    "HX0xEUq6pu+mzo3wejo5fg2OoxaFu/BXjnC+RNB6WdpyPjn0Zot3nRSiloJglE+mIY7F7FTjUcKJkcoasDAgEGCjK1"
    "PoguParBgNel9iJNYbZAG0P5AdsJ8OTYTOTkonGLebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmTzQdKsFf"
    "EFJIzSxRQDyEVwwqYQRqcLSbfDU8Jam6e9V9rTSVyPFwngGOHBRqYwtfgOla3lqdIGTJr2WeIf8WtRjJclj04kifG7"
    "PRApFI4NgwtaE5na/xCEBI572Nvp+FkLvDRqV2Z8OAEgvZx/1+UdLF/f6jfNL1v0BbLGv28teMb6evO+2606PWXzaq"
    "vJdDGxu+TC0vbg5HymAgNFL11hAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAG3fbh12Whk9nL4UbO63ms"
    "HLSF7V9bN5E6jPWFfv8AqQVKU1qZKSEGTSTocWDaOHx8NbXdvJK7geQfqEBBBUSNOVv3J/mqxegJEVkQc/z5yCb0KI"
    "BBMcoIm+ujhpQhdJoDBAYAAgUGBwgBAQgEAwYCAQoMh9YSAAAAAAAGCQEBGWdwdW5leCBwYXlvdXQgcG9fMDFKRDNY"
    "WVo=";
inline constexpr std::string_view kTx2Signature =
    "5vk9by7sXBPzCxN6a5yG1Jdd4EmoT92mz1sHVRyRzL1UrVTMcFa5rjC9SYp6KcXnViw7EhdYSUyEzrKg3CXtAfaW";
// kTx1's instructions through web3.js's older Transaction class, which orders the keys of
// a class by their base58 text (see transaction.h).
inline constexpr std::string_view kTx1LegacyClassHex =
    "016967f900476a7de8e070db34cee1496337e9d6e15b2cd3a4c7abf9acce8212dab3172973cff45cf06c645176"
    "a168a202706fc78ac96707a6db4d6774bc0092000100060979b5562e8fe654f94078b112e8a98ba7901f853ae6"
    "95bed7e0e3910bad049664dad3495c8f1709e018e1c146a630b5f80e95ade5a9d2064c9af659e21ff16b51f341"
    "d2ac15f105248cd2c51403c84570c2a61046a70b49b7c353c25a9ba7bd57000000000000000000000000000000"
    "00000000000000000000000000000000008c97258f4e2489f1bb3d1029148e0d830b5a1399daff1084048e7bd8"
    "dbe9f859c6fa7af3bedbad3a3d65f36aabc97431b1bbe4c2d2f6e0e47ca60203452f5d61054a535a992921064d"
    "24e87160da387c7c35b5ddbc92bb81e41fa8404105448d0bbc346a57667c380120bd9c7fd7e51d2c5fdfea37cd"
    "2f5bf405b2c6bf6f2d7806ddf6e1d765a193d9cbe146ceeb79ac1cb485ed5f5b37913a8cf5857eff00a9395bf7"
    "27f9aac5e80911591073fcf9c826f428804131ca089beba3869421749a03040600020705030801010804010502"
    "000a0c87d612000000000006060100196770756e6578207061796f757420706f5f30314a443358595a";

}  // namespace gpunex::platform::solana::testing
