#include "platform/solana/solana_module.h"

#include "common/log.h"

namespace gpunex::platform::solana {

namespace {

// The [solana] table and its environment variables.
struct SolanaSettings {
  std::string rpc_url;
  std::string keypair;
  std::string usdc_mint = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
  std::string commitment = "confirmed";
  int rpc_timeout_ms = 10'000;
};

StatusOr<std::any> Parse(ConfigTable& t, const EnvGetter& env) {
  SolanaSettings o;
  GPUNEX_RETURN_IF_ERROR(t.Str("rpc_url", &o.rpc_url));
  GPUNEX_RETURN_IF_ERROR(t.Str("keypair", &o.keypair));
  GPUNEX_RETURN_IF_ERROR(t.Str("usdc_mint", &o.usdc_mint));
  GPUNEX_RETURN_IF_ERROR(t.Str("commitment", &o.commitment));
  GPUNEX_RETURN_IF_ERROR(t.Int("rpc_timeout_ms", &o.rpc_timeout_ms, 100, 120'000));
  for (auto [var, field] : {std::pair{"GPUNEX_SOLANA_RPC_URL", &o.rpc_url},
                            std::pair{"GPUNEX_SOLANA_KEYPAIR", &o.keypair},
                            std::pair{"GPUNEX_SOLANA_USDC_MINT", &o.usdc_mint},
                            std::pair{"GPUNEX_SOLANA_COMMITMENT", &o.commitment}}) {
    if (auto v = env(var)) *field = *v;
  }
  if (o.commitment != "processed" && o.commitment != "confirmed" && o.commitment != "finalized") {
    return FieldError("solana.commitment", "must be processed, confirmed or finalized");
  }
  if (o.rpc_url.empty() != o.keypair.empty()) {
    return FieldError("solana", "rpc_url and keypair must be set together");
  }
  return std::any(o);
}

constexpr std::string_view kExample =
    R"([solana]                         # PAY-4, PAY-6; docs/payouts.md
rpc_url = ""                     # JSON-RPC endpoint (GPUNEX_SOLANA_RPC_URL); "" : no USDC
keypair = ""                     # the platform's key file, Solana CLI format, mode 0600
usdc_mint = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"   # mainnet USDC
commitment = "confirmed"         # payouts and top-ups count once they reach this
rpc_timeout_ms = 10000
)";

Status Build(ModuleEnv& env) {
  const SolanaSettings& c = env.config.Section<SolanaSettings>("solana");
  auto wallet = std::make_unique<PlatformWallet>();
  wallet->commitment = c.commitment;
  GPUNEX_ASSIGN_OR_RETURN(wallet->usdc_mint, ParsePubkey(c.usdc_mint, "solana.usdc_mint"));
  if (!c.rpc_url.empty()) {
    if (Status st = ValidateRpcUrl(c.rpc_url); !st.ok()) {
      return InvalidArgument("solana.rpc_url: " + st.message());
    }
    GPUNEX_ASSIGN_OR_RETURN(wallet->key, LoadKeypairFile(c.keypair));
    wallet->rpc = HttpRpc(c.rpc_url, std::chrono::milliseconds(c.rpc_timeout_ms));
    const Pubkey token_account = AssociatedTokenAddress(wallet->key->public_key, wallet->usdc_mint);
    LogInfo("solana.wallet", {{"public_key", ToBase58(wallet->key->public_key)},
                              {"usdc_token_account", ToBase58(token_account)}});
    // Payers' wallets refuse to pay a token account that does not exist (docs/payouts.md).
    auto account = wallet->rpc->GetAccountInfo(token_account, c.commitment);
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

Module SolanaModule() {
  return Module{
      .name = "solana",
      .config = ConfigSection{.name = "solana", .parse = Parse, .example = std::string(kExample)},
      .build = Build};
}

}  // namespace gpunex::platform::solana
