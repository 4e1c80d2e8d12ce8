// Solana Pay transfer requests for USDC (https://docs.solanapay.com/spec): the URL a
// wallet turns into a payment, and the check that a transaction on chain is such a
// payment to gpunex.
//
// The URL is
//   solana:<recipient>?amount=<decimal>&spl-token=<mint>&reference=<reference>
//       &label=<label>&message=<message>&memo=<memo>
// with the recipient the platform's wallet (its owner, never the token account: the
// wallet derives the associated token account from recipient and spl-token), the amount
// in USDC ("12.5", "0.000001": no trailing zeros, a leading 0 below 1, no exponent), and
// label, message and memo percent-encoded UTF-8 (RFC 3986: every byte but A-Z a-z 0-9
// - . _ ~, so that a space is %20, which every URL parser decodes; '+' is not used).
//
// The spec has the wallet make the LAST instruction of the transaction an SPL Token
// Transfer or TransferChecked to the recipient's associated token account, with each
// reference appended to that instruction's accounts as a readonly non-signer, and the
// memo, when given, in an SPL Memo instruction right before it. That is what @solana/pay's
// createTransfer builds. CheckPayment accepts exactly that shape, and takes the amount
// from the token balances the runtime recorded (meta.pre/postTokenBalances), not from the
// instruction: what counts is what arrived in gpunex's account.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/money.h"
#include "platform/solana/address.h"
#include "platform/solana/rpc.h"

namespace gpunex::platform::topups {

struct TransferRequest {
  solana::Pubkey recipient;  // the wallet (owner) that receives
  Usdc amount;
  solana::Pubkey mint;  // spl-token
  solana::Pubkey reference;
  std::string label;    // who asks ("gpunex")
  std::string message;  // what for ("Top up of 12.5 USDC")
  std::string memo;     // recorded on chain in a Memo instruction: nothing private
};

std::string TransferRequestUrl(const TransferRequest& r);

// RFC 3986 percent-encoding of every byte outside the unreserved characters.
std::string PercentEncode(std::string_view s);

// "12.5", "1", "0.000001": USDC in decimal without trailing zeros (the spec's amount).
// REQUIRES: amount >= 0.
std::string DecimalUsdc(Usdc amount);

struct PaymentCheck {
  bool ok = false;
  // What arrived in the platform's token account (when the transfer was found, also for a
  // payment of too little).
  Usdc received;
  std::string reason;  // why it is not a payment that can be credited; "" when ok
};

// Whether `tx` pays at least `asked` USDC of `mint` into `token_account` (the platform's
// associated token account for `mint`) as a Solana Pay transfer with `reference`:
//   - it succeeded (no err);
//   - `reference` is among its account keys;
//   - its last instruction is the SPL Token program's TransferChecked (12) or Transfer (3)
//     whose destination is `token_account`, and for TransferChecked whose mint is `mint`;
//   - the token balances show `token_account` holding `mint` with 6 decimals, and the
//     increase from before to after the transaction (received) is at least `asked`.
// Index errors in the answer (an instruction naming an account beyond the keys) fail the
// check rather than read out of bounds.
PaymentCheck CheckPayment(const solana::TransactionInfo& tx, const solana::Pubkey& reference,
                          const solana::Pubkey& mint, const solana::Pubkey& token_account,
                          Usdc asked);

}  // namespace gpunex::platform::topups
