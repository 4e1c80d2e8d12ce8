// Top-ups over a real store on both backends, with a FakeClock and a fake Solana RPC
// that answers with transactions built by the solana library exactly as @solana/pay's
// createTransfer builds them from our URL (a Memo, then TransferChecked to the
// recipient's associated token account with the reference appended as a readonly
// non-signer), with the token balances the runtime would record. A payment is credited
// once, however often and by however many it is seen; the wrong mint, too little,
// another recipient, a failed transaction and a last instruction that is no transfer are
// never credited; one transaction credits one top-up; expired top-ups are watched until
// watch_s; bounds, authorization and the QR code.
#include "platform/topups/topups.h"

#include <gtest/gtest.h>
#include <qrencode.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "common/background.h"
#include "common/testing/enum_names.h"
#include "platform/billing/ledger.h"
#include "platform/solana/keypair.h"
#include "platform/solana/transaction.h"
#include "platform/testing/platform_test.h"
#include "platform/topups/qr.h"
#include "platform/topups/solana_pay.h"
#include "platform/topups/topups_store.h"

namespace gpunex::platform::topups {
namespace {

using solana::Pubkey;

// getSignaturesForAddress indexes every account key of a landed transaction, newest
// first; getTransaction answers the landed ones. Calls may come from many threads.
class FakeRpc final : public solana::Rpc {
 public:
  // Lands `tx`; `visible` false: getTransaction does not have it yet.
  void Land(const solana::TransactionInfo& tx, bool visible = true) {
    MutexLock lock(&mu_);
    solana::SignatureInfo info;
    info.signature = tx.signatures.at(0);
    info.slot = ++slot_;
    info.err = tx.err;
    info.confirmation_status = "confirmed";
    for (const Pubkey& k : tx.account_keys) {
      auto& list = by_key_[solana::ToBase58(k)];
      list.insert(list.begin(), info);
    }
    if (visible) txs_[info.signature] = tx;
    hidden_[info.signature] = tx;
  }
  void Reveal(const std::string& signature) {
    MutexLock lock(&mu_);
    txs_[signature] = hidden_.at(signature);
  }
  void FailWith(Status st) {
    MutexLock lock(&mu_);
    fail_ = std::move(st);
  }
  int transaction_calls() const { return transaction_calls_.load(); }

  StatusOr<std::vector<solana::SignatureInfo>> SignaturesForAddress(
      const Pubkey& address, int limit, std::optional<std::string> before,
      std::string_view commitment) override {
    EXPECT_EQ(commitment, "confirmed");
    EXPECT_FALSE(before.has_value());
    MutexLock lock(&mu_);
    if (!fail_.ok()) return fail_;
    auto it = by_key_.find(solana::ToBase58(address));
    if (it == by_key_.end()) return std::vector<solana::SignatureInfo>();
    std::vector<solana::SignatureInfo> out = it->second;
    if (out.size() > static_cast<size_t>(limit)) out.resize(limit);
    return out;
  }
  StatusOr<std::optional<solana::TransactionInfo>> GetTransaction(
      const std::string& signature, std::string_view commitment) override {
    EXPECT_EQ(commitment, "confirmed");
    ++transaction_calls_;
    MutexLock lock(&mu_);
    if (!fail_.ok()) return fail_;
    auto it = txs_.find(signature);
    if (it == txs_.end()) return std::optional<solana::TransactionInfo>();
    return std::optional<solana::TransactionInfo>(it->second);
  }

  StatusOr<solana::BlockhashInfo> LatestBlockhash(std::string_view) override { return No(); }
  StatusOr<uint64_t> BlockHeight(std::string_view) override { return No(); }
  StatusOr<std::string> SendTransaction(const std::string&, bool, std::string_view) override {
    return No();
  }
  StatusOr<std::vector<std::optional<solana::SignatureStatus>>> SignatureStatuses(
      const std::vector<std::string>&, bool) override {
    return No();
  }
  StatusOr<std::optional<solana::AccountInfo>> GetAccountInfo(const Pubkey&,
                                                              std::string_view) override {
    return No();
  }

 private:
  static Status No() { return Internal("top-ups do not call this"); }

  Mutex mu_;
  uint64_t slot_ GUARDED_BY(mu_) = 1000;
  std::map<std::string, std::vector<solana::SignatureInfo>> by_key_ GUARDED_BY(mu_);
  std::map<std::string, solana::TransactionInfo> txs_ GUARDED_BY(mu_);
  std::map<std::string, solana::TransactionInfo> hidden_ GUARDED_BY(mu_);
  Status fail_ GUARDED_BY(mu_);
  std::atomic<int> transaction_calls_{0};
};

// What a wallet reads from a Solana Pay transfer request URL.
struct ParsedUrl {
  Pubkey recipient{};
  Usdc amount;
  Pubkey spl_token{};
  std::vector<Pubkey> references;
  std::map<std::string, std::string> params;  // decoded
};

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

ParsedUrl ParseUrl(const std::string& url) {
  ParsedUrl p;
  EXPECT_EQ(url.rfind("solana:", 0), 0u) << url;
  const size_t q = url.find('?');
  p.recipient = *solana::ParsePubkey(url.substr(7, q - 7), "recipient");
  std::string_view rest = std::string_view(url).substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view part = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? "" : rest.substr(amp + 1);
    const size_t eq = part.find('=');
    const std::string key(part.substr(0, eq));
    const std::string value = PercentDecode(part.substr(eq + 1));
    // A value that must be URL-encoded never shows its reserved characters raw.
    EXPECT_EQ(part.substr(eq + 1).find_first_of(" +"), std::string_view::npos) << part;
    if (key == "reference") p.references.push_back(*solana::ParsePubkey(value, "reference"));
    p.params[key] = value;
  }
  p.amount = *Usdc::Parse(p.params["amount"]);
  p.spl_token = *solana::ParsePubkey(p.params["spl-token"], "spl-token");
  return p;
}

Pubkey RandomKey() { return solana::GenerateKeypair().public_key; }

// What a payment changes from the URL's request.
struct Pay {
  std::optional<Usdc> amount = std::nullopt;  // the URL's
  std::optional<Pubkey> mint = std::nullopt;  // the URL's spl-token
  std::optional<Pubkey> to = std::nullopt;    // the URL's recipient
  std::vector<Pubkey> more_references = {};   // besides the URL's
  bool transfer_checked = true;               // else Transfer
  bool memo_after = false;  // a Memo after the transfer: its last instruction is no transfer
  std::optional<std::string> err = std::nullopt;
};

class TopupsTest : public platform::testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    clock_.Set(*ParseRfc3339("2026-12-01T10:00:00Z"));
    accounts_ = std::make_unique<accounts::Accounts>(db(), FastAccountsOptions());
    auto carl = accounts_->SignUp({"carl@example.com", "customer-password", "Carl"}, "192.0.2.9");
    ASSERT_TRUE(carl.ok()) << carl.status().ToString();
    carl_ = carl->id;
    auto dora = accounts_->SignUp({"dora@example.com", "customer-password", "Dora"}, "192.0.2.9");
    ASSERT_TRUE(dora.ok()) << dora.status().ToString();
    dora_ = dora->id;
    mint_ = RandomKey();
    wallet_ = RandomKey();
    topups_ = Make(&rpc_);
  }

  TopupsOptions Options() {
    TopupsOptions o;
    o.mint = mint_;
    o.recipient = wallet_;
    o.clock = &clock_;
    return o;
  }
  std::unique_ptr<Topups> Make(solana::Rpc* rpc) {
    return std::make_unique<Topups>(faulty(), rpc, Options());
  }

  Topup Create(int64_t micros, const std::string& user = "") {
    auto t = topups_->Create(As(user.empty() ? carl_ : user), Usdc::Micros(micros));
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : Topup{};
  }
  Topup Load(const std::string& id, const std::string& user = "") {
    auto t = topups_->Get(As(user.empty() ? carl_ : user), id);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : Topup{};
  }

  // A payment as @solana/pay's createTransfer makes it from `url`, with `pay`'s changes.
  solana::TransactionInfo Payment(const std::string& url, const Pay& pay = {}) {
    const ParsedUrl u = ParseUrl(url);
    const solana::Keypair payer = solana::GenerateKeypair();
    const Pubkey mint = pay.mint.value_or(u.spl_token);
    const Pubkey owner = pay.to.value_or(u.recipient);
    const Pubkey source = solana::AssociatedTokenAddress(payer.public_key, mint);
    const Pubkey destination = solana::AssociatedTokenAddress(owner, mint);
    const uint64_t amount = static_cast<uint64_t>(pay.amount.value_or(u.amount).micros());
    std::vector<solana::Instruction> ixs;
    if (u.params.count("memo")) ixs.push_back(solana::Memo(u.params.at("memo")));
    solana::Instruction t;
    if (pay.transfer_checked) {
      t = solana::TransferChecked(source, mint, destination, payer.public_key, amount, 6);
    } else {
      t.program = solana::TokenProgram();
      t.accounts = {
          {source, false, true}, {destination, false, true}, {payer.public_key, true, false}};
      t.data = {3};
      for (int i = 0; i < 8; ++i) t.data.push_back(static_cast<uint8_t>(amount >> (8 * i)));
    }
    std::vector<Pubkey> refs = u.references;
    refs.insert(refs.end(), pay.more_references.begin(), pay.more_references.end());
    for (const Pubkey& r : refs) t.accounts.push_back({r, false, false});
    ixs.push_back(std::move(t));
    if (pay.memo_after) ixs.push_back(solana::Memo("thanks"));
    auto message = solana::BuildMessage(payer.public_key, ixs, RandomKey());
    EXPECT_TRUE(message.ok()) << message.status().ToString();
    auto signed_tx = solana::SignTransaction(solana::SerializeMessage(*message), {&payer});
    EXPECT_TRUE(signed_tx.ok()) << signed_tx.status().ToString();

    solana::TransactionInfo tx;
    tx.slot = 4242;
    tx.err = pay.err;
    tx.signatures = {signed_tx->signature};
    tx.header = message->header;
    tx.account_keys = message->account_keys;
    tx.instructions = message->instructions;
    auto index = [&](const Pubkey& k) {
      for (size_t i = 0; i < tx.account_keys.size(); ++i) {
        if (tx.account_keys[i] == k) return static_cast<uint8_t>(i);
      }
      ADD_FAILURE() << "no such key";
      return uint8_t{0};
    };
    const uint64_t moved = pay.err ? 0 : amount;
    const uint64_t payer_had = 1'000'000'000, platform_had = 7'000'000;
    tx.pre_token_balances = {{index(source), mint, payer.public_key, payer_had, 6},
                             {index(destination), mint, owner, platform_had, 6}};
    tx.post_token_balances = {{index(source), mint, payer.public_key, payer_had - moved, 6},
                              {index(destination), mint, owner, platform_had + moved, 6}};
    return tx;
  }
  // Pays `t` as its URL asks (with `pay`'s changes); returns the signature.
  std::string PayFor(const Topup& t, const Pay& pay = {}) {
    solana::TransactionInfo tx = Payment(t.url, pay);
    rpc_.Land(tx);
    return tx.signatures[0];
  }

  int64_t Poll(Topups* topups = nullptr) {
    auto n = (topups ? topups : topups_.get())->Poll();
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return n.ok() ? *n : -1;
  }
  int64_t BalanceOf(const std::string& user) {
    int64_t out = -1;
    EXPECT_TRUE(db().Read([&](store::Tx& tx) -> Status {
                      GPUNEX_ASSIGN_OR_RETURN(Usdc b,
                                              billing::Balance(tx, billing::CustomerAccount(user)));
                      out = b.micros();
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }
  int64_t Transfers() {
    return Number("SELECT COUNT(*) FROM ledger_transfers WHERE kind = 'usdc_topup'");
  }
  void ExpectLedgerOk() {
    ASSERT_TRUE(db().Read([&](store::Tx& tx) -> Status {
                      GPUNEX_ASSIGN_OR_RETURN(billing::CheckResult c, billing::Check(tx));
                      EXPECT_TRUE(c.ok);
                      EXPECT_EQ(c.sum_micro, 0);
                      return Status::Ok();
                    })
                    .ok());
  }
  // A top-up that was not credited: still pending, its detail saying why.
  void ExpectRefused(const Topup& t, const std::string& why) {
    EXPECT_EQ(Poll(), 0);
    Topup now = Load(t.id);
    EXPECT_EQ(Name(now.status), "pending");
    EXPECT_FALSE(now.signature.has_value());
    EXPECT_NE(now.detail.find(why), std::string::npos) << now.detail;
    EXPECT_NE(now.detail.find("not credited"), std::string::npos) << now.detail;
    EXPECT_EQ(BalanceOf(carl_), 0);
    EXPECT_EQ(Transfers(), 0);
  }

  std::unique_ptr<accounts::Accounts> accounts_;
  std::string carl_, dora_;
  Pubkey mint_{}, wallet_{};
  FakeRpc rpc_;
  std::unique_ptr<Topups> topups_;
};

TEST_P(TopupsTest, TheUrlIsATransferRequestForThePlatformsWallet) {
  Topup t = Create(12'500'000);
  EXPECT_EQ(t.id.rfind("tu_", 0), 0u);
  EXPECT_EQ(Name(t.status), "pending");
  EXPECT_EQ(t.detail, "waiting for a payment of 12.5 USDC");
  EXPECT_EQ(t.expires_at, clock_.Now() + kOneHour);
  EXPECT_EQ(t.recipient, solana::ToBase58(wallet_));
  EXPECT_EQ(t.mint, solana::ToBase58(mint_));
  ParsedUrl u = ParseUrl(t.url);
  EXPECT_EQ(u.recipient, wallet_);  // the wallet, never its token account
  EXPECT_EQ(u.spl_token, mint_);
  EXPECT_EQ(u.amount, Usdc::Micros(12'500'000));
  EXPECT_EQ(u.params["amount"], "12.5");
  ASSERT_EQ(u.references.size(), 1u);
  EXPECT_EQ(solana::ToBase58(u.references[0]), t.reference);
  EXPECT_EQ(u.params["label"], "gpunex");
  EXPECT_EQ(u.params["message"], "Top up of 12.5 USDC");
  EXPECT_EQ(u.params["memo"], t.id);
  EXPECT_NE(t.url.find("&message=Top%20up%20of%2012.5%20USDC&"), std::string::npos) << t.url;
  // References are random and unique.
  EXPECT_NE(Create(12'500'000).reference, t.reference);
}

TEST_P(TopupsTest, APaymentMadeFromTheUrlIsCreditedOnce) {
  Topup t = Create(12'500'000);
  EXPECT_EQ(Poll(), 0);
  const std::string sig = PayFor(t);
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Poll(), 0);
  auto again = topups_->Check(t.id);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);

  Topup done = Load(t.id);
  EXPECT_EQ(Name(done.status), "credited");
  EXPECT_EQ(done.signature, sig);
  EXPECT_EQ(done.credited, Usdc::Micros(12'500'000));
  EXPECT_EQ(done.credited_at, clock_.Now());
  EXPECT_EQ(done.detail, "credited 12.5 USDC from transaction " + sig);
  EXPECT_EQ(BalanceOf(carl_), 12'500'000);
  EXPECT_EQ(Text("SELECT kind FROM ledger_transfers WHERE id = ?", {TransferId(sig)}),
            "usdc_topup");
  EXPECT_EQ(Text("SELECT debit_account FROM ledger_transfers WHERE id = ?", {TransferId(sig)}),
            "world_usdc");
  EXPECT_EQ(Transfers(), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND kind = ?",
                   {carl_, std::string("topup.credited")}),
            1);
  ExpectLedgerOk();
}

TEST_P(TopupsTest, ConcurrentChecksAndTwoInstancesCreditOnce) {
  Topup t = Create(5'000'000);
  PayFor(t);
  auto other = Make(&rpc_);  // a second gpunexd on the same database
  std::atomic<int> credited{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto c = (i % 2 ? other : topups_)->Check(t.id);
      if (!c.ok()) {
        ++failed;
        ADD_FAILURE() << c.status().ToString();
      } else if (*c) {
        ++credited;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(credited.load(), 1);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(Poll(other.get()), 0);
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
  EXPECT_EQ(Transfers(), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND kind = ?",
                   {carl_, std::string("topup.credited")}),
            1);
  ExpectLedgerOk();
}

TEST_P(TopupsTest, ACheckOnReadCreditsAPendingOne) {
  Topup t = Create(5'000'000);
  PayFor(t);
  EXPECT_EQ(Name(Load(t.id).status), "credited");  // no Poll
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
}

TEST_P(TopupsTest, WhatArrivedIsCreditedWhenItIsMore) {
  Topup t = Create(12'500'000);
  const std::string sig = PayFor(t, {.amount = Usdc::Micros(20'000'000)});
  EXPECT_EQ(Poll(), 1);
  Topup done = Load(t.id);
  EXPECT_EQ(done.credited, Usdc::Micros(20'000'000));
  EXPECT_EQ(done.detail, "credited 20 USDC (12.5 USDC asked) from transaction " + sig);
  EXPECT_EQ(BalanceOf(carl_), 20'000'000);
}

TEST_P(TopupsTest, APlainTransferIsAcceptedToo) {
  Topup t = Create(5'000'000);
  PayFor(t, {.transfer_checked = false});
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
}

TEST_P(TopupsTest, TheWrongMintIsNotCredited) {
  Topup t = Create(5'000'000);
  PayFor(t, {.mint = RandomKey()});
  ExpectRefused(t, "wrong mint");
}

TEST_P(TopupsTest, TooLittleIsNotCreditedAndTheTopupWaitsForAFullPayment) {
  Topup t = Create(5'000'000);
  const std::string sig = PayFor(t, {.amount = Usdc::Micros(3'500'000)});
  ExpectRefused(t, "a payment of 3.5 USDC was found, less than the 5 USDC asked: not credited");
  EXPECT_NE(Load(t.id).detail.find(sig), std::string::npos);
  // A refused transaction is not fetched again at every round.
  const int fetched = rpc_.transaction_calls();
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(rpc_.transaction_calls(), fetched);
  // A full payment later is credited, and only it.
  const std::string full = PayFor(t);
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Load(t.id).signature, full);
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
}

TEST_P(TopupsTest, APaymentToAnotherAccountIsNotCredited) {
  Topup t = Create(5'000'000);
  PayFor(t, {.to = RandomKey()});
  ExpectRefused(t, "another account");
}

TEST_P(TopupsTest, AFailedTransactionIsNotCredited) {
  Topup t = Create(5'000'000);
  PayFor(t, {.err = "{\"InstructionError\":[1,{\"Custom\":1}]}"});
  ExpectRefused(t, "failed on chain");
}

TEST_P(TopupsTest, ALastInstructionThatIsNoTransferIsNotCredited) {
  Topup t = Create(5'000'000);
  PayFor(t, {.memo_after = true});
  ExpectRefused(t, "the last instruction is not a USDC transfer");
}

TEST_P(TopupsTest, OneTransactionCreditsOneTopup) {
  Topup a = Create(5'000'000);
  clock_.Advance(kOneSecond);
  Topup b = Create(5'000'000);
  ParsedUrl ub = ParseUrl(b.url);
  // One transfer that carries both references.
  const std::string sig = PayFor(a, {.more_references = ub.references});
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Name(Load(a.id).status), "credited");
  Topup nb = Load(b.id);
  EXPECT_EQ(Name(nb.status), "pending");
  EXPECT_NE(nb.detail.find("credited to another top-up"), std::string::npos) << nb.detail;
  auto check = topups_->Check(b.id);
  ASSERT_TRUE(check.ok());
  EXPECT_FALSE(*check);
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
  EXPECT_EQ(Transfers(), 1);
  // The database holds that line too: no second top-up may hold the signature.
  Status st = db().Transact([&](store::Tx& tx) -> Status {
    return tx
        .Exec(
            "UPDATE topups SET status = 'credited', signature = ?, credited_micro = 5000000, "
            "credited_at = 1 WHERE id = ?",
            {sig, b.id})
        .status();
  });
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
}

TEST_P(TopupsTest, ASecondPaymentToTheSameReferenceIsNotCredited) {
  Topup t = Create(5'000'000);
  const std::string first = PayFor(t);
  PayFor(t);
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Load(t.id).signature, first);  // the oldest
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
}

TEST_P(TopupsTest, ATransactionNotYetAtTheCommitmentIsCreditedWhenItIs) {
  Topup t = Create(5'000'000);
  solana::TransactionInfo tx = Payment(t.url);
  rpc_.Land(tx, /*visible=*/false);
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(Load(t.id).detail, "waiting for a payment of 5 USDC");
  rpc_.Reveal(tx.signatures[0]);
  EXPECT_EQ(Poll(), 1);
}

TEST_P(TopupsTest, AnExpiredTopupIsWatchedUntilWatchS) {
  Topup t = Create(5'000'000);
  clock_.Advance(Seconds(3601));
  EXPECT_EQ(Name(Load(t.id).status), "expired");  // shown so before the loop marks it
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(Text("SELECT status FROM topups WHERE id = ?", {t.id}), "expired");
  PayFor(t);
  EXPECT_EQ(Poll(), 0);  // expired ones are looked for every expired_check_s
  clock_.Advance(Seconds(301));
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Name(Load(t.id).status), "credited");
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);

  Topup late = Create(7'000'000);
  clock_.Advance(Seconds(7 * 24 * 3600 + 1));
  PayFor(late);
  EXPECT_EQ(Poll(), 0);
  auto check = topups_->Check(late.id);
  ASSERT_TRUE(check.ok());
  EXPECT_FALSE(*check);
  EXPECT_EQ(Name(Load(late.id).status), "expired");
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
}

TEST_P(TopupsTest, AmountsOutsideTheBoundsNameTheField) {
  for (int64_t micros : {int64_t{0}, int64_t{-5}, int64_t{999'999}, int64_t{100'000'000'001}}) {
    auto t = topups_->Create(As(carl_), Usdc::Micros(micros));
    ASSERT_FALSE(t.ok()) << micros;
    EXPECT_EQ(t.status().code(), StatusCode::kValidationFailed);
    EXPECT_EQ(t.status().fields().count("amount_micro"), 1u) << t.status().ToString();
  }
  EXPECT_TRUE(topups_->Create(As(carl_), Usdc::Micros(1'000'000)).ok());
  EXPECT_TRUE(topups_->Create(As(carl_), Usdc::Micros(100'000'000'000)).ok());
}

TEST_P(TopupsTest, PendingTopupsPerCustomerAreBounded) {
  for (int i = 0; i < 20; ++i) Create(1'000'000);
  auto one_more = topups_->Create(As(carl_), Usdc::Micros(1'000'000));
  EXPECT_EQ(one_more.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(topups_->Create(As(dora_), Usdc::Micros(1'000'000)).ok());
  clock_.Advance(Seconds(3601));  // expired ones do not count
  EXPECT_TRUE(topups_->Create(As(carl_), Usdc::Micros(1'000'000)).ok());
}

TEST_P(TopupsTest, AnotherCustomersTopupIsNotFound) {
  Topup t = Create(5'000'000);
  EXPECT_EQ(topups_->Get(As(dora_), t.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(topups_->QrSvg(As(dora_), t.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(topups_->Get(As(carl_), "tu_nope").status().code(), StatusCode::kNotFound);
  auto theirs = topups_->List(As(dora_), {});
  ASSERT_TRUE(theirs.ok());
  EXPECT_TRUE(theirs->items.empty());
  clock_.Advance(kOneSecond);
  Topup second = Create(6'000'000);
  auto mine = topups_->List(As(carl_), {.limit = 1, .after = std::nullopt});
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->items.size(), 1u);
  EXPECT_EQ(mine->items[0].id, second.id);  // newest first
  EXPECT_FALSE(mine->items[0].url.empty());
  ASSERT_TRUE(mine->next.has_value());
  auto rest = topups_->List(As(carl_), {.limit = 1, .after = mine->next});
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->items.size(), 1u);
  EXPECT_EQ(rest->items[0].id, t.id);
  EXPECT_FALSE(rest->next.has_value());
}

TEST_P(TopupsTest, WithoutAnRpcTopupsAreNotOffered) {
  auto none = Make(nullptr);
  EXPECT_FALSE(none->offered());
  EXPECT_EQ(none->Create(As(carl_), Usdc::Micros(5'000'000)).status().code(),
            StatusCode::kFailedPrecondition);
  auto n = none->Poll();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
}

TEST_P(TopupsTest, ACreditWhoseCommitIsLostIsMadeOnce) {
  constexpr const char* kCredit = "UPDATE topups SET status = ?, signature = ?";
  Topup t = Create(5'000'000);
  PayFor(t);
  // It committed, but the answer was lost: the next round finds it credited.
  faulty().FailCommit(kCredit, /*committed=*/true);
  EXPECT_EQ(topups_->Check(t.id).status().code(), StatusCode::kOutcomeUnknown);
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);

  Topup u = Create(6'000'000);
  PayFor(u);
  // It did not commit: the next round credits it.
  faulty().FailCommit(kCredit, /*committed=*/false);
  EXPECT_EQ(topups_->Check(u.id).status().code(), StatusCode::kOutcomeUnknown);
  EXPECT_EQ(Name(Load(u.id, carl_).status), "credited");  // checked on read
  // A conflict retries the transaction, which credits once.
  Topup v = Create(7'000'000);
  PayFor(v);
  faulty().FailStatement(kCredit, Aborted("injected conflict"));
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(BalanceOf(carl_), 18'000'000);
  EXPECT_EQ(Transfers(), 3);
  ExpectLedgerOk();
}

TEST_P(TopupsTest, AnUnreachableNodeChangesNothing) {
  Topup t = Create(5'000'000);
  PayFor(t);
  rpc_.FailWith(Unavailable("the node is down"));
  EXPECT_EQ(topups_->Poll().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Name(Load(t.id).status), "pending");  // the stored state answers
  rpc_.FailWith(Status::Ok());
  EXPECT_EQ(Poll(), 1);
}

TEST_P(TopupsTest, TheQrCodeIsAnSvgOfTheUrl) {
  Topup t = Create(12'500'000);
  auto svg = topups_->QrSvg(As(carl_), t.id);
  ASSERT_TRUE(svg.ok()) << svg.status().ToString();
  EXPECT_EQ(svg->rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg->find("viewBox=\"0 0 "), std::string::npos);
  EXPECT_NE(svg->find("shape-rendering=\"crispEdges\""), std::string::npos);
  EXPECT_NE(svg->find("<path fill=\"#000\" d=\"M"), std::string::npos);
  EXPECT_EQ(svg->find("<script"), std::string::npos);
  EXPECT_EQ(svg->substr(svg->size() - 7), "</svg>\n");
  EXPECT_EQ(std::count(svg->begin(), svg->end(), '<'), 4);  // svg, rect, path, /svg
}

TEST(TopupsQr, TextsAQrCodeCannotHoldAreRefused) {
  EXPECT_EQ(QrSvg("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(QrSvg(std::string("a\0b", 3)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(QrSvg(std::string(3000, 'x')).status().code(), StatusCode::kInvalidArgument);
  // Version 1 (21 modules) plus the quiet zone.
  auto small = QrSvg("gpunex");
  ASSERT_TRUE(small.ok());
  EXPECT_NE(small->find("viewBox=\"0 0 29 29\""), std::string::npos) << *small;
}

// The path, read back module by module, is libqrencode's symbol inside a 4-module
// quiet zone.
TEST(TopupsQr, TheSvgDrawsTheSymbolsDarkModules) {
  const std::string text = "solana:7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU?amount=12.5";
  auto svg = QrSvg(text);
  ASSERT_TRUE(svg.ok());
  std::unique_ptr<QRcode, void (*)(QRcode*)> qr(
      QRcode_encodeString(text.c_str(), 0, QR_ECLEVEL_M, QR_MODE_8, 1), QRcode_free);
  ASSERT_NE(qr, nullptr);
  const int n = qr->width, size = n + 8;
  EXPECT_NE(svg->find("viewBox=\"0 0 " + std::to_string(size) + " " + std::to_string(size) + "\""),
            std::string::npos);
  std::vector<std::vector<bool>> drawn(size, std::vector<bool>(size, false));
  const size_t d = svg->find(" d=\"") + 4;
  std::istringstream path(svg->substr(d, svg->find('"', d) - d));
  char m, h, v, h2, z;
  int x, y, len, one, back;
  while (path >> m >> x >> y >> h >> len >> v >> one >> h2 >> back >> z) {
    ASSERT_EQ(std::string({m, h, v, h2, z}), "Mhvhz");
    ASSERT_EQ(one, 1);
    ASSERT_EQ(back, -len);
    for (int i = 0; i < len; ++i) drawn.at(y).at(x + i) = true;
  }
  for (int r = 0; r < size; ++r) {
    for (int c = 0; c < size; ++c) {
      const bool inside = r >= 4 && c >= 4 && r < n + 4 && c < n + 4;
      const bool dark = inside && (qr->data[(r - 4) * n + (c - 4)] & 1);
      ASSERT_EQ(drawn[r][c], dark) << r << "," << c;
    }
  }
}

TEST_P(TopupsTest, LoopCreditsInTheBackground) {
  TopupsOptions o = Options();
  o.loop_ms = 10;
  Topups looping(faulty(), &rpc_, o);
  Topup t = Create(5'000'000);
  PayFor(t);
  Background background;
  looping.ScheduleOn(background);
  background.Start();
  for (int i = 0; i < 500 && BalanceOf(carl_) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  background.Stop();
  EXPECT_EQ(BalanceOf(carl_), 5'000'000);
}

GPUNEX_INSTANTIATE_BACKENDS(TopupsTest);

TEST(TopupStatusTest, EachStatusHasOneNameAndMovesOnlyForward) {
  gpunex::testing::ExpectEachNameReadsBack(kTopupStatusNames, TopupStatus::kExpired);
  static_assert(TopupMayGo(TopupStatus::kPending, TopupStatus::kCredited));
  static_assert(TopupMayGo(TopupStatus::kPending, TopupStatus::kExpired));
  static_assert(TopupMayGo(TopupStatus::kExpired, TopupStatus::kCredited));
  static_assert(!TopupMayGo(TopupStatus::kCredited, TopupStatus::kPending));
  static_assert(!TopupMayGo(TopupStatus::kExpired, TopupStatus::kPending));
  static_assert(!TopupMayGo(TopupStatus::kPending, TopupStatus::kPending));
  // The migration, never edited, spells the statuses in its checks: they are the table's.
  std::string sql;
  for (const auto& m : TopupsMigrations()) {
    for (const auto& st : m.statements) sql += st;
  }
  std::string in = "status IN (";
  for (const auto& status : kTopupStatusNames.entries) {
    in += (in.back() == '(' ? "'" : ", '") + std::string(status.second) + "'";
  }
  in += ")";
  EXPECT_NE(sql.find(in), std::string::npos) << in;
  EXPECT_NE(sql.find("(status = '" + std::string(Name(TopupStatus::kCredited)) + "')"),
            std::string::npos);
}

}  // namespace
}  // namespace gpunex::platform::topups
