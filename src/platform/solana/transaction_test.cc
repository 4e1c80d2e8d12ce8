#include "platform/solana/transaction.h"

#include <gtest/gtest.h>

#include <set>

#include "platform/solana/testing/vectors.h"

namespace gpunex::platform::solana {
namespace {

using testing::Hex;
using testing::Key;
using testing::ToHex;

struct Parties {
  Keypair owner = KeypairFromSeed(testing::Seed(0));
  Keypair recipient = KeypairFromSeed(testing::Seed(1));
  Keypair payer = KeypairFromSeed(testing::Seed(2));
  Pubkey mint = Key(kMainnetUsdcMint);
};

// The instructions of testing::kTx1 / kTx2, with `fee_payer` paying for the account.
std::vector<Instruction> PayoutInstructions(const Parties& p, const Pubkey& fee_payer) {
  Pubkey source = AssociatedTokenAddress(p.owner.public_key, p.mint);
  Pubkey destination = AssociatedTokenAddress(p.recipient.public_key, p.mint);
  return {CreateAssociatedTokenAccountIdempotent(fee_payer, destination, p.recipient.public_key,
                                                 p.mint),
          TransferChecked(source, p.mint, destination, p.owner.public_key, testing::kTxAmount,
                          kUsdcDecimals),
          Memo(testing::kMemo, {p.owner.public_key})};
}

std::vector<uint8_t> Wire(std::string_view base64) {
  auto b = DecodeBase64(base64);
  EXPECT_TRUE(b.has_value());
  return b.value_or(std::vector<uint8_t>{});
}

TEST(Instructions, Layouts) {
  Pubkey a{}, b{}, c{}, d{};
  a[0] = 1, b[0] = 2, c[0] = 3, d[0] = 4;
  Instruction t = TransferChecked(a, b, c, d, 0x0102030405060708ull, 6);
  EXPECT_EQ(t.program, TokenProgram());
  EXPECT_EQ(t.data, (std::vector<uint8_t>{12, 8, 7, 6, 5, 4, 3, 2, 1, 6}));
  ASSERT_EQ(t.accounts.size(), 4u);
  EXPECT_TRUE(!t.accounts[0].is_signer && t.accounts[0].is_writable);
  EXPECT_TRUE(!t.accounts[1].is_signer && !t.accounts[1].is_writable);
  EXPECT_TRUE(!t.accounts[2].is_signer && t.accounts[2].is_writable);
  EXPECT_TRUE(t.accounts[3].is_signer && !t.accounts[3].is_writable);

  Instruction ata = CreateAssociatedTokenAccountIdempotent(a, b, c, d);
  EXPECT_EQ(ata.program, AssociatedTokenProgram());
  EXPECT_EQ(ata.data, std::vector<uint8_t>{1});
  ASSERT_EQ(ata.accounts.size(), 6u);
  EXPECT_TRUE(ata.accounts[0].is_signer && ata.accounts[0].is_writable);
  EXPECT_EQ(ata.accounts[4].key, SystemProgram());
  EXPECT_EQ(ata.accounts[5].key, TokenProgram());

  Instruction m = Memo("héllo", {a});
  EXPECT_EQ(m.program, MemoProgram());
  EXPECT_EQ(m.data.size(), 6u);
  ASSERT_EQ(m.accounts.size(), 1u);
  EXPECT_TRUE(m.accounts[0].is_signer && !m.accounts[0].is_writable);
}

TEST(Transaction, MatchesWeb3ByteForByte) {
  Parties p;
  auto message = CompileMessage(p.owner.public_key, PayoutInstructions(p, p.owner.public_key),
                                Key(testing::kBlockhash));
  ASSERT_TRUE(message.ok()) << message.status().ToString();
  auto tx = SignTransaction(*message, {&p.owner});
  ASSERT_TRUE(tx.ok()) << tx.status().ToString();
  EXPECT_EQ(ToHex(tx->wire), ToHex(Wire(testing::kTx1Base64)));
  EXPECT_EQ(tx->Base64(), testing::kTx1Base64);
  EXPECT_EQ(tx->signature, testing::kTx1Signature);
}

TEST(Transaction, TwoSignersMatchWeb3InAnyOrder) {
  Parties p;
  auto message = CompileMessage(p.payer.public_key, PayoutInstructions(p, p.payer.public_key),
                                Key(testing::kBlockhash));
  ASSERT_TRUE(message.ok());
  for (const auto& signers : {std::vector<const Keypair*>{&p.payer, &p.owner},
                              std::vector<const Keypair*>{&p.owner, &p.payer}}) {
    auto tx = SignTransaction(*message, signers);
    ASSERT_TRUE(tx.ok()) << tx.status().ToString();
    EXPECT_EQ(tx->Base64(), testing::kTx2Base64);
    EXPECT_EQ(tx->signature, testing::kTx2Signature);
  }
  auto missing = SignTransaction(*message, {&p.payer});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find(ToBase58(p.owner.public_key)), std::string::npos);
  auto extra = SignTransaction(*message, {&p.payer, &p.owner, &p.recipient});
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find(ToBase58(p.recipient.public_key)), std::string::npos);
}

// web3.js's Transaction class orders the keys within a class by base58 text, so its bytes
// differ from ours; the same accounts, flags and instructions, and valid signatures.
TEST(Transaction, SameContentAsWeb3TransactionClass) {
  auto theirs = DecodeTransaction(Hex(testing::kTx1LegacyClassHex));
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  auto ours = DecodeTransaction(Wire(testing::kTx1Base64));
  ASSERT_TRUE(ours.ok());
  EXPECT_TRUE(VerifySignatures(*theirs));
  const Message& a = theirs->message;
  const Message& b = ours->message;
  EXPECT_EQ(a.header.num_required_signatures, b.header.num_required_signatures);
  EXPECT_EQ(a.header.num_readonly_signed, b.header.num_readonly_signed);
  EXPECT_EQ(a.header.num_readonly_unsigned, b.header.num_readonly_unsigned);
  auto flagged = [](const Message& m) {
    std::set<std::tuple<Pubkey, bool, bool>> s;
    for (size_t i = 0; i < m.account_keys.size(); ++i) {
      s.insert({m.account_keys[i], m.IsSigner(i), m.IsWritable(i)});
    }
    return s;
  };
  EXPECT_EQ(flagged(a), flagged(b));
  EXPECT_EQ(a.account_keys[0], b.account_keys[0]);  // the fee payer first in both
  ASSERT_EQ(a.instructions.size(), b.instructions.size());
  for (size_t i = 0; i < a.instructions.size(); ++i) {
    const auto& x = a.instructions[i];
    const auto& y = b.instructions[i];
    EXPECT_EQ(a.account_keys[x.program_id_index], b.account_keys[y.program_id_index]);
    ASSERT_EQ(x.accounts.size(), y.accounts.size());
    for (size_t j = 0; j < x.accounts.size(); ++j) {
      EXPECT_EQ(a.account_keys[x.accounts[j]], b.account_keys[y.accounts[j]]);
    }
    EXPECT_EQ(x.data, y.data);
  }
}

TEST(Transaction, DecodesWhatItSigned) {
  Parties p;
  auto tx = DecodeTransaction(Wire(testing::kTx1Base64));
  ASSERT_TRUE(tx.ok()) << tx.status().ToString();
  ASSERT_EQ(tx->signatures.size(), 1u);
  EXPECT_EQ(Base58(tx->signatures[0]), testing::kTx1Signature);
  EXPECT_TRUE(VerifySignatures(*tx));
  const Message& m = tx->message;
  EXPECT_EQ(m.header.num_required_signatures, 1);
  EXPECT_EQ(m.header.num_readonly_signed, 0);
  EXPECT_EQ(m.header.num_readonly_unsigned, 6);
  // payer; writable: destination ATA, source ATA; readonly: ATA program, recipient, mint,
  // system, token, memo.
  ASSERT_EQ(m.account_keys.size(), 9u);
  EXPECT_EQ(m.account_keys[0], p.owner.public_key);
  EXPECT_EQ(m.account_keys[1], AssociatedTokenAddress(p.recipient.public_key, p.mint));
  EXPECT_EQ(m.account_keys[2], AssociatedTokenAddress(p.owner.public_key, p.mint));
  EXPECT_EQ(m.account_keys[3], AssociatedTokenProgram());
  EXPECT_EQ(m.account_keys[8], MemoProgram());
  EXPECT_EQ(m.recent_blockhash, Key(testing::kBlockhash));
  ASSERT_EQ(m.instructions.size(), 3u);
  EXPECT_EQ(m.instructions[1].accounts, (std::vector<uint8_t>{2, 5, 1, 0}));
  EXPECT_EQ(m.instructions[1].data[0], 12);
  EXPECT_EQ(std::string(m.instructions[2].data.begin(), m.instructions[2].data.end()),
            testing::kMemo);
  EXPECT_TRUE(m.IsWritable(0) && m.IsSigner(0));
  EXPECT_TRUE(m.IsWritable(2) && !m.IsSigner(2));
  EXPECT_FALSE(m.IsWritable(3));
  EXPECT_EQ(SerializeMessage(m), tx->message_bytes);

  // A changed byte of the message breaks the signature.
  auto wire = Wire(testing::kTx1Base64);
  wire.back() ^= 1;
  auto tampered = DecodeTransaction(wire);
  ASSERT_TRUE(tampered.ok());
  EXPECT_FALSE(VerifySignatures(*tampered));
}

TEST(Transaction, DecodeRefusesEveryTruncationAndTrailingBytes) {
  auto wire = Wire(testing::kTx2Base64);
  for (size_t n = 0; n < wire.size(); ++n) {
    auto got = DecodeTransaction(std::span<const uint8_t>(wire.data(), n));
    ASSERT_FALSE(got.ok()) << n;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  }
  wire.push_back(0);
  EXPECT_FALSE(DecodeTransaction(wire).ok());
}

TEST(Transaction, DecodeRefusesMalformedMessages) {
  auto good = Wire(testing::kTx1Base64);
  const size_t msg = 1 + 64;  // the message's first byte
  auto with = [&](size_t at, uint8_t value) {
    auto w = good;
    w[at] = value;
    return DecodeTransaction(w);
  };
  EXPECT_FALSE(with(msg, 0x80).ok());   // a version 0 message
  EXPECT_FALSE(with(msg, 2).ok());      // 2 signers required, 1 signature
  EXPECT_FALSE(with(msg + 1, 1).ok());  // the only signer readonly
  EXPECT_FALSE(with(msg + 2, 9).ok());  // more readonly keys than unsigned ones
  // The first instruction's program index beyond the 9 keys.
  size_t first_ix = msg + 3 + 1 + 9 * 32 + 32 + 1;
  EXPECT_TRUE(with(first_ix, 8).ok());
  EXPECT_FALSE(with(first_ix, 9).ok());
  EXPECT_FALSE(with(first_ix + 2, 200).ok());  // an account index beyond
  // compact-u16: 0x80 0x00 is a non-minimal 0; three bytes above 16 bits.
  EXPECT_FALSE(DecodeTransaction(std::vector<uint8_t>{0x80, 0x00}).ok());
  EXPECT_FALSE(DecodeTransaction(std::vector<uint8_t>{0xff, 0xff, 0x04}).ok());
  EXPECT_FALSE(DecodeMessage(std::vector<uint8_t>{}).ok());
}

TEST(Transaction, CompileMessageKeepsToThePacketLimit) {
  Keypair payer = KeypairFromSeed(testing::Seed(0));
  Pubkey bh = Key(testing::kBlockhash);
  auto size_with = [&](size_t memo_bytes) -> StatusOr<size_t> {
    GPUNEX_ASSIGN_OR_RETURN(
        auto m, CompileMessage(payer.public_key, {Memo(std::string(memo_bytes, 'x'))}, bh));
    return 1 + 64 + m.size();
  };
  auto base = size_with(200);
  ASSERT_TRUE(base.ok());
  size_t fits = 200 + (kPacketDataSize - *base);
  auto at_limit = size_with(fits);
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().ToString();
  EXPECT_EQ(*at_limit, kPacketDataSize);
  auto over = size_with(fits + 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("1233 bytes"), std::string::npos)
      << over.status().message();

  // The largest that fits signs into exactly 1232 bytes and decodes back (2-byte lengths).
  auto m = CompileMessage(payer.public_key, {Memo(std::string(fits, 'x'))}, bh);
  ASSERT_TRUE(m.ok());
  auto tx = SignTransaction(*m, {&payer});
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ(tx->wire.size(), kPacketDataSize);
  auto back = DecodeTransaction(tx->wire);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->message.instructions[0].data.size(), fits);
}

TEST(Transaction, MergesDuplicateKeys) {
  Keypair payer = KeypairFromSeed(testing::Seed(0));
  Pubkey other{};
  other[0] = 9;
  // `other` readonly in one instruction and writable in another: writable once.
  Instruction a{MemoProgram(), {{other, false, false}}, {}};
  Instruction b{MemoProgram(), {{other, false, true}, {payer.public_key, false, false}}, {}};
  auto m = BuildMessage(payer.public_key, {a, b}, Key(testing::kBlockhash));
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->account_keys.size(), 3u);
  EXPECT_EQ(m->account_keys[0], payer.public_key);
  EXPECT_EQ(m->account_keys[1], other);
  EXPECT_EQ(m->account_keys[2], MemoProgram());
  EXPECT_EQ(m->header.num_required_signatures, 1);
  EXPECT_EQ(m->header.num_readonly_unsigned, 1);
  EXPECT_EQ(m->instructions[1].accounts, (std::vector<uint8_t>{1, 0}));
}

TEST(Base64, RoundTripsAndRefusesGarbage) {
  std::vector<uint8_t> b = {0, 1, 2, 250, 251, 252, 253};
  EXPECT_EQ(Base64(b), "AAEC+vv8/Q==");
  EXPECT_EQ(DecodeBase64("AAEC+vv8/Q==").value(), b);
  EXPECT_EQ(DecodeBase64("").value(), std::vector<uint8_t>{});
  EXPECT_FALSE(DecodeBase64("AAEC+vv8/Q").has_value());  // padding required
  EXPECT_FALSE(DecodeBase64("AA-_").has_value());        // base64url is not base64
  EXPECT_FALSE(DecodeBase64("AAEC\n").has_value());
}

std::vector<uint8_t> TokenAccountBytes(uint8_t state, size_t size = kTokenAccountSize) {
  std::vector<uint8_t> d(size, 0);
  for (int i = 0; i < 32; ++i) d[i] = 0x11, d[32 + i] = 0x22;
  uint64_t amount = 1'000'000'123'456ull;
  for (int i = 0; i < 8; ++i) d[64 + i] = static_cast<uint8_t>(amount >> (8 * i));
  if (size > 108) d[108] = state;
  return d;
}

TEST(TokenAccount, ParsesTheSplLayout) {
  auto a = ParseTokenAccount(TokenAccountBytes(1));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->mint[0], 0x11);
  EXPECT_EQ(a->owner[31], 0x22);
  EXPECT_EQ(a->amount, 1'000'000'123'456ull);
  EXPECT_EQ(a->state, TokenAccountState::kInitialized);
  EXPECT_EQ(ParseTokenAccount(TokenAccountBytes(2))->state, TokenAccountState::kFrozen);
  EXPECT_FALSE(ParseTokenAccount(TokenAccountBytes(0)).has_value());  // uninitialized
  EXPECT_FALSE(ParseTokenAccount(TokenAccountBytes(3)).has_value());
  EXPECT_FALSE(ParseTokenAccount(TokenAccountBytes(1, 164)).has_value());
  EXPECT_FALSE(ParseTokenAccount(TokenAccountBytes(1, 82)).has_value());  // a mint
  // Token-2022 with extensions: account type 2 at byte 165.
  auto ext = TokenAccountBytes(1, 200);
  EXPECT_FALSE(ParseTokenAccount(ext).has_value());
  ext[165] = 2;
  EXPECT_TRUE(ParseTokenAccount(ext).has_value());
  ext[165] = 1;  // a mint with extensions
  EXPECT_FALSE(ParseTokenAccount(ext).has_value());
}

}  // namespace
}  // namespace gpunex::platform::solana
