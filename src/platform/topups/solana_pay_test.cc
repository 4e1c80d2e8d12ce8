// The Solana Pay URL of a top-up (amount, percent-encoding, parameter order) and the
// checks of a payment that do not need a store: malformed answers, Transfer and
// TransferChecked, balances that disagree with the instruction.
#include "platform/topups/solana_pay.h"

#include <gtest/gtest.h>

#include "platform/solana/transaction.h"

namespace gpunex::platform::topups {
namespace {

solana::Pubkey Key(uint8_t fill) {
  solana::Pubkey k;
  k.fill(fill);
  return k;
}

TEST(SolanaPay, DecimalUsdcHasNoTrailingZerosAndALeadingZero) {
  EXPECT_EQ(DecimalUsdc(Usdc::Micros(12'500'000)), "12.5");
  EXPECT_EQ(DecimalUsdc(Usdc::Micros(1'000'000)), "1");
  EXPECT_EQ(DecimalUsdc(Usdc::Micros(1)), "0.000001");
  EXPECT_EQ(DecimalUsdc(Usdc::Micros(100'010'000)), "100.01");
  EXPECT_EQ(DecimalUsdc(Usdc::Micros(0)), "0");
}

TEST(SolanaPay, PercentEncodesEverythingButUnreserved) {
  EXPECT_EQ(PercentEncode("Top up of 12.5 USDC"), "Top%20up%20of%2012.5%20USDC");
  EXPECT_EQ(PercentEncode("a+b&c=d/é~_-."), "a%2Bb%26c%3Dd%2F%C3%A9~_-.");
  EXPECT_EQ(PercentEncode("tu_01JD3ABC"), "tu_01JD3ABC");
}

TEST(SolanaPay, TheUrlFollowsTheSpec) {
  TransferRequest r{.recipient = Key(1),
                    .amount = Usdc::Micros(12'500'000),
                    .mint = Key(2),
                    .reference = Key(3),
                    .label = "gpunex",
                    .message = "Top up of 12.5 USDC",
                    .memo = "tu_1"};
  EXPECT_EQ(TransferRequestUrl(r), "solana:" + solana::ToBase58(Key(1)) +
                                       "?amount=12.5&spl-token=" + solana::ToBase58(Key(2)) +
                                       "&reference=" + solana::ToBase58(Key(3)) +
                                       "&label=gpunex&message=Top%20up%20of%2012.5%20USDC"
                                       "&memo=tu_1");
}

// A transaction with keys [payer, source, destination, mint, reference, token program]
// whose last instruction is `data` on the token program over `accounts`.
solana::TransactionInfo Tx(std::vector<uint8_t> accounts, std::vector<uint8_t> data) {
  solana::TransactionInfo tx;
  tx.account_keys = {Key(10), Key(11), Key(12), Key(13), Key(14), solana::TokenProgram()};
  tx.instructions.push_back({5, std::move(accounts), std::move(data)});
  tx.pre_token_balances = {{2, Key(13), Key(20), 1'000'000, 6}};
  tx.post_token_balances = {{2, Key(13), Key(20), 6'000'000, 6}};
  return tx;
}

std::vector<uint8_t> Data(uint8_t op, uint64_t amount, bool decimals) {
  std::vector<uint8_t> d{op};
  for (int i = 0; i < 8; ++i) d.push_back(static_cast<uint8_t>(amount >> (8 * i)));
  if (decimals) d.push_back(6);
  return d;
}

TEST(SolanaPay, BothTransferInstructionsAreAcceptedAndTheBalancesDecide) {
  const Usdc five = Usdc::Micros(5'000'000);
  auto checked =
      CheckPayment(Tx({1, 3, 2, 0, 4}, Data(12, 5'000'000, true)), Key(14), Key(13), Key(12), five);
  EXPECT_TRUE(checked.ok) << checked.reason;
  EXPECT_EQ(checked.received, five);
  auto plain =
      CheckPayment(Tx({1, 2, 0, 4}, Data(3, 5'000'000, false)), Key(14), Key(13), Key(12), five);
  EXPECT_TRUE(plain.ok) << plain.reason;
  // The instruction claims 9 USDC; the balances say 5 arrived: 5 it is.
  auto claims_more = CheckPayment(Tx({1, 3, 2, 0, 4}, Data(12, 9'000'000, true)), Key(14), Key(13),
                                  Key(12), Usdc::Micros(9'000'000));
  EXPECT_FALSE(claims_more.ok);
  EXPECT_EQ(claims_more.received, five);
  EXPECT_EQ(claims_more.reason, "a payment of 5 USDC was found, less than the 9 USDC asked");
}

TEST(SolanaPay, MalformedAnswersAreRefusedNotRead) {
  const Usdc one = Usdc::Micros(1'000'000);
  auto beyond = Tx({1, 3, 2, 0, 77}, Data(12, 5'000'000, true));
  EXPECT_EQ(CheckPayment(beyond, Key(14), Key(13), Key(12), one).reason,
            "the transaction is malformed");
  auto program = Tx({1, 3, 2, 0, 4}, Data(12, 5'000'000, true));
  program.instructions.back().program_id_index = 200;
  EXPECT_EQ(CheckPayment(program, Key(14), Key(13), Key(12), one).reason,
            "the transaction is malformed");
  auto short_data = Tx({1, 3, 2, 0, 4}, {12, 1, 2});
  EXPECT_EQ(CheckPayment(short_data, Key(14), Key(13), Key(12), one).reason,
            "the last instruction is not a USDC transfer");
  auto few_accounts = Tx({1, 3}, Data(12, 5'000'000, true));
  EXPECT_EQ(CheckPayment(few_accounts, Key(14), Key(13), Key(12), one).reason,
            "the last instruction is not a USDC transfer");
  auto no_balance = Tx({1, 3, 2, 0, 4}, Data(12, 5'000'000, true));
  no_balance.post_token_balances.clear();
  EXPECT_EQ(CheckPayment(no_balance, Key(14), Key(13), Key(12), one).reason,
            "the transaction records no balance of gpunex's USDC account");
  auto decimals = Tx({1, 3, 2, 0, 4}, Data(12, 5'000'000, true));
  decimals.post_token_balances[0].decimals = 9;
  EXPECT_EQ(CheckPayment(decimals, Key(14), Key(13), Key(12), one).reason,
            "the token has 9 decimals, not 6");
  auto nothing = Tx({1, 3, 2, 0, 4}, Data(12, 5'000'000, true));
  nothing.post_token_balances[0].amount = 1'000'000;
  EXPECT_EQ(CheckPayment(nothing, Key(14), Key(13), Key(12), one).reason,
            "the payment added nothing to gpunex's USDC account");
  auto no_reference = Tx({1, 3, 2, 0}, Data(12, 5'000'000, true));
  EXPECT_EQ(CheckPayment(no_reference, Key(15), Key(13), Key(12), one).reason,
            "the transaction does not carry the top-up's reference");
  auto empty = Tx({}, {});
  empty.instructions.clear();
  EXPECT_EQ(CheckPayment(empty, Key(14), Key(13), Key(12), one).reason,
            "the transaction has no instructions");
}

TEST(SolanaPay, ABalanceOfAnotherMintIsTheWrongMint) {
  // A plain Transfer names no mint: the balance of the destination does.
  auto tx = Tx({1, 2, 0, 4}, Data(3, 5'000'000, false));
  tx.post_token_balances[0].mint = Key(30);
  auto c = CheckPayment(tx, Key(14), Key(13), Key(12), Usdc::Micros(1'000'000));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("wrong mint"), std::string::npos) << c.reason;
}

TEST(SolanaPay, AnAccountCreatedByThePaymentStartsAtZero) {
  auto tx = Tx({1, 3, 2, 0, 4}, Data(12, 6'000'000, true));
  tx.pre_token_balances.clear();
  auto c = CheckPayment(tx, Key(14), Key(13), Key(12), Usdc::Micros(6'000'000));
  EXPECT_TRUE(c.ok) << c.reason;
  EXPECT_EQ(c.received, Usdc::Micros(6'000'000));
}

}  // namespace
}  // namespace gpunex::platform::topups
