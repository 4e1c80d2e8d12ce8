#include "platform/solana/solana_module.h"

#include "common/log.h"

namespace gpunex::platform::solana {

namespace {

Status Build(ModuleEnv& env) {
  const Config& c = env.config;
  auto wallet = std::make_unique<PlatformWallet>();
  GPUNEX_ASSIGN_OR_RETURN(wallet->usdc_mint, ParsePubkey(c.solana_usdc_mint, "solana.usdc_mint"));
  if (!c.solana_rpc_url.empty()) {
    if (Status st = ValidateRpcUrl(c.solana_rpc_url); !st.ok()) {
      return InvalidArgument("solana.rpc_url: " + st.message());
    }
    GPUNEX_ASSIGN_OR_RETURN(wallet->key, LoadKeypairFile(c.solana_keypair));
    wallet->rpc = HttpRpc(c.solana_rpc_url, std::chrono::milliseconds(c.solana_rpc_timeout_ms));
    const Pubkey token_account = AssociatedTokenAddress(wallet->key->public_key, wallet->usdc_mint);
    LogInfo("solana.wallet", {{"public_key", ToBase58(wallet->key->public_key)},
                              {"usdc_token_account", ToBase58(token_account)}});
    // Payers' wallets refuse to pay a token account that does not exist (docs/payouts.md).
    auto account = wallet->rpc->GetAccountInfo(token_account, c.solana_commitment);
    if (account.ok() && !*account) {
      LogWarn("solana.no_token_account",
              {{"message",
                "the platform's USDC token account does not exist yet: fund it "
                "before offering top-ups and payouts"},
               {"usdc_token_account", ToBase58(token_account)}});
    }
  }
  env.services.Own(std::move(wallet));
  return Status::Ok();
}

}  // namespace

Module SolanaModule() { return Module{.name = "solana", .build = Build}; }

}  // namespace gpunex::platform::solana
