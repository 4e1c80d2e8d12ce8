#include "platform/topups/solana_pay.h"

#include <cstdint>
#include <limits>
#include <optional>

namespace gpunex::platform::topups {
namespace {

constexpr uint8_t kTransfer = 3;
constexpr uint8_t kTransferChecked = 12;

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

PaymentCheck Refused(std::string reason, Usdc received = Usdc::Zero()) {
  PaymentCheck c;
  c.received = received;
  c.reason = std::move(reason);
  return c;
}

// The token balance of account `index` for any mint in `balances`.
const solana::TokenBalance* BalanceOf(const std::vector<solana::TokenBalance>& balances,
                                      size_t index) {
  for (const auto& b : balances) {
    if (b.account_index == index) return &b;
  }
  return nullptr;
}

}  // namespace

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (Unreserved(c)) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

std::string DecimalUsdc(Usdc amount) {
  const int64_t m = amount.micros();
  std::string out = std::to_string(m / Usdc::kMicrosPerUsdc);
  int64_t frac = m % Usdc::kMicrosPerUsdc;
  if (frac == 0) return out;
  std::string digits = std::to_string(frac);
  digits.insert(0, 6 - digits.size(), '0');
  while (digits.back() == '0') digits.pop_back();
  return out + "." + digits;
}

std::string TransferRequestUrl(const TransferRequest& r) {
  std::string url = "solana:" + solana::ToBase58(r.recipient);
  url += "?amount=" + DecimalUsdc(r.amount);
  url += "&spl-token=" + solana::ToBase58(r.mint);
  url += "&reference=" + solana::ToBase58(r.reference);
  if (!r.label.empty()) url += "&label=" + PercentEncode(r.label);
  if (!r.message.empty()) url += "&message=" + PercentEncode(r.message);
  if (!r.memo.empty()) url += "&memo=" + PercentEncode(r.memo);
  return url;
}

PaymentCheck CheckPayment(const solana::TransactionInfo& tx, const solana::Pubkey& reference,
                          const solana::Pubkey& mint, const solana::Pubkey& token_account,
                          Usdc asked) {
  if (tx.err) return Refused("the transaction failed on chain");
  const auto& keys = tx.account_keys;
  bool has_reference = false;
  for (const auto& k : keys) has_reference = has_reference || k == reference;
  if (!has_reference) return Refused("the transaction does not carry the top-up's reference");
  if (tx.instructions.empty()) return Refused("the transaction has no instructions");

  const solana::CompiledInstruction& ix = tx.instructions.back();
  if (ix.program_id_index >= keys.size()) return Refused("the transaction is malformed");
  for (uint8_t a : ix.accounts) {
    if (a >= keys.size()) return Refused("the transaction is malformed");
  }
  if (keys[ix.program_id_index] != solana::TokenProgram() || ix.data.empty())
    return Refused("the last instruction is not a USDC transfer");
  std::optional<size_t> destination;
  if (ix.data[0] == kTransferChecked && ix.data.size() >= 10 && ix.accounts.size() >= 4) {
    const solana::Pubkey& ix_mint = keys[ix.accounts[1]];
    if (ix_mint != mint) {
      return Refused("wrong mint: the transfer is of token " + solana::ToBase58(ix_mint) +
                     ", not USDC (" + solana::ToBase58(mint) + ")");
    }
    destination = ix.accounts[2];
  } else if (ix.data[0] == kTransfer && ix.data.size() >= 9 && ix.accounts.size() >= 3) {
    destination = ix.accounts[1];
  } else {
    return Refused("the last instruction is not a USDC transfer");
  }
  if (keys[*destination] != token_account) {
    return Refused("the transfer goes to another account (" + solana::ToBase58(keys[*destination]) +
                   ") than gpunex's USDC account (" + solana::ToBase58(token_account) + ")");
  }

  // What arrived, from the balances the runtime recorded.
  const solana::TokenBalance* post = BalanceOf(tx.post_token_balances, *destination);
  if (post == nullptr)
    return Refused("the transaction records no balance of gpunex's USDC account");
  if (post->mint != mint) {
    return Refused("wrong mint: the transfer is of token " + solana::ToBase58(post->mint) +
                   ", not USDC (" + solana::ToBase58(mint) + ")");
  }
  if (post->decimals != solana::kUsdcDecimals) {
    return Refused("the token has " + std::to_string(post->decimals) + " decimals, not " +
                   std::to_string(solana::kUsdcDecimals));
  }
  uint64_t before = 0;  // no balance before: the account was created by this transaction
  if (const solana::TokenBalance* pre = BalanceOf(tx.pre_token_balances, *destination)) {
    if (pre->mint != mint) return Refused("the balances of gpunex's USDC account disagree");
    before = pre->amount;
  }
  if (post->amount <= before) return Refused("the payment added nothing to gpunex's USDC account");
  const uint64_t increase = post->amount - before;
  if (increase > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return Refused("the payment is too large to credit");
  const Usdc received = Usdc::Micros(static_cast<int64_t>(increase));
  if (received < asked) {
    return Refused("a payment of " + DecimalUsdc(received) + " USDC was found, less than the " +
                       DecimalUsdc(asked) + " USDC asked",
                   received);
  }
  PaymentCheck ok;
  ok.ok = true;
  ok.received = received;
  return ok;
}

}  // namespace gpunex::platform::topups
