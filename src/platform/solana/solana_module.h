// The solana folder as a module of gpunexd (module/module.h): the platform's wallet, its
// key and RPC endpoint, when configured (PAY-4).
#pragma once

#include <memory>
#include <optional>

#include "platform/module/module.h"
#include "platform/solana/address.h"
#include "platform/solana/keypair.h"
#include "platform/solana/rpc.h"

namespace gpunex::platform::solana {

// The platform's wallet on Solana, for payouts and top-ups (the service this module
// offers).
struct PlatformWallet {
  Pubkey usdc_mint{};
  std::optional<Keypair> key;  // with an RPC URL only
  std::unique_ptr<Rpc> rpc;    // null without an RPC URL: USDC payouts and top-ups are off
  // What payouts and top-ups wait for: "processed", "confirmed" or "finalized".
  std::string commitment = "confirmed";
};

Module SolanaModule();

}  // namespace gpunex::platform::solana
