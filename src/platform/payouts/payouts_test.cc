// Payouts over a real store on both backends with a FakeClock and an in-memory chain that
// executes our three instructions with the rules that matter here (signatures, the one
// valid blockhash and its last valid block height, token balances, a transaction landing
// once per signature): runs pay every eligible provider exactly once and carry the others
// over, at every named crash point and with dropped sends and expired blockhashes; the
// wallet running short; bank files, their results and retries; settings and their
// validation, password and hold. The e2e tests run the same against LiteSVM.
#include "platform/payouts/payouts.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/ids.h"
#include "common/testing/enum_names.h"
#include "platform/bank/nacha.h"
#include "platform/bank/pain001.h"
#include "platform/billing/ledger.h"
#include "platform/payouts/calendar.h"
#include "platform/providers/providers.h"
#include "platform/solana/address.h"
#include "platform/solana/transaction.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::payouts {
namespace {

using solana::Pubkey;

constexpr int64_t kUsdc = 1'000'000;

// An in-memory chain behind the Rpc interface.
class FakeChain final : public solana::Rpc {
 public:
  explicit FakeChain(Pubkey mint) : mint_(mint) { NewBlockhash(); }

  // --- test controls
  void Fund(const Pubkey& owner, uint64_t lamports, uint64_t usdc) {
    MutexLock l(&mu_);
    lamports_[owner] += lamports;
    const Pubkey ata = solana::AssociatedTokenAddress(owner, mint_);
    tokens_[ata] = {owner, tokens_[ata].amount + usdc};
  }
  uint64_t UsdcOf(const Pubkey& owner) {
    MutexLock l(&mu_);
    auto t = tokens_.find(solana::AssociatedTokenAddress(owner, mint_));
    return t == tokens_.end() ? 0 : t->second.amount;
  }
  bool HasTokenAccount(const Pubkey& owner) {
    MutexLock l(&mu_);
    return tokens_.count(solana::AssociatedTokenAddress(owner, mint_)) > 0;
  }
  // Landed transactions whose memo names the payout.
  int LandedFor(const std::string& payout_id) {
    MutexLock l(&mu_);
    int n = 0;
    for (const auto& [sig, memo] : memos_) n += memo == "gpunex payout " + payout_id;
    return n;
  }
  void DropNextSends(int n) {
    MutexLock l(&mu_);
    drop_ = n;
  }
  // The block height passes every blockhash issued so far.
  void ExpireBlockhash() {
    MutexLock l(&mu_);
    height_ += 151;
    NewBlockhash();
  }
  void HoldConfirmations(bool hold) {
    MutexLock l(&mu_);
    hold_ = hold;
  }
  int sends() {
    MutexLock l(&mu_);
    return sends_;
  }

  // --- Rpc
  StatusOr<solana::BlockhashInfo> LatestBlockhash(std::string_view) override {
    MutexLock l(&mu_);
    return solana::BlockhashInfo{blockhash_, blockhash_height_ + 150, height_};
  }
  StatusOr<uint64_t> BlockHeight(std::string_view) override {
    MutexLock l(&mu_);
    return height_;
  }
  StatusOr<std::string> SendTransaction(const std::string& base64, bool,
                                        std::string_view) override {
    MutexLock l(&mu_);
    ++sends_;
    auto wire = solana::DecodeBase64(base64);
    if (!wire) return InvalidArgument("not base64");
    GPUNEX_ASSIGN_OR_RETURN(solana::DecodedTransaction tx, solana::DecodeTransaction(*wire));
    if (!solana::VerifySignatures(tx)) return FailedPrecondition("signature verification failure");
    const std::string sig = solana::Base58(tx.signatures[0]);
    if (landed_.count(sig)) return sig;
    if (tx.message.recent_blockhash != blockhash_ || height_ > blockhash_height_ + 150)
      return FailedPrecondition("Transaction simulation failed: Blockhash not found");
    if (drop_ > 0) {
      --drop_;
      return sig;  // accepted, never lands
    }
    // Execute on copies: a failing instruction changes nothing (preflight refuses it).
    auto tokens = tokens_;
    auto lamports = lamports_;
    const auto& keys = tx.message.account_keys;
    std::string memo;
    if (lamports[keys[0]] < 5000) return FailedPrecondition("insufficient funds for fee");
    lamports[keys[0]] -= 5000;
    for (const auto& ins : tx.message.instructions) {
      const Pubkey& program = keys[ins.program_id_index];
      auto key = [&](size_t i) { return keys[ins.accounts.at(i)]; };
      if (program == solana::AssociatedTokenProgram()) {
        if (!tokens.count(key(1))) {
          if (lamports[key(0)] < 2'039'280) return FailedPrecondition("insufficient lamports");
          lamports[key(0)] -= 2'039'280;
          tokens[key(1)] = {key(2), 0};
        }
      } else if (program == solana::TokenProgram()) {
        if (ins.data.size() != 10 || ins.data[0] != 12)
          return FailedPrecondition("not TransferChecked");
        uint64_t amount = 0;
        for (int i = 0; i < 8; ++i) amount |= static_cast<uint64_t>(ins.data[1 + i]) << (8 * i);
        if (key(1) != mint_) return FailedPrecondition("wrong mint");
        auto src = tokens.find(key(0));
        if (src == tokens.end() || src->second.owner != key(3) || src->second.amount < amount)
          return FailedPrecondition("Transaction simulation failed: insufficient funds");
        if (!tokens.count(key(2))) return FailedPrecondition("no destination account");
        src->second.amount -= amount;
        tokens[key(2)].amount += amount;
      } else if (program == solana::MemoProgram()) {
        memo.assign(ins.data.begin(), ins.data.end());
      }
    }
    tokens_ = std::move(tokens);
    lamports_ = std::move(lamports);
    landed_[sig] = ++slot_;
    memos_[sig] = memo;
    ++height_;
    return sig;
  }
  StatusOr<std::vector<std::optional<solana::SignatureStatus>>> SignatureStatuses(
      const std::vector<std::string>& sigs, bool) override {
    MutexLock l(&mu_);
    std::vector<std::optional<solana::SignatureStatus>> out;
    for (const auto& s : sigs) {
      auto it = landed_.find(s);
      if (it == landed_.end()) {
        out.emplace_back();
        continue;
      }
      solana::SignatureStatus st;
      st.slot = it->second;
      st.confirmation_status = hold_ ? "processed" : "finalized";
      if (hold_) st.confirmations = 0;
      out.push_back(st);
    }
    return out;
  }
  StatusOr<std::optional<solana::AccountInfo>> GetAccountInfo(const Pubkey& address,
                                                              std::string_view) override {
    MutexLock l(&mu_);
    if (auto t = tokens_.find(address); t != tokens_.end()) {
      solana::AccountInfo a;
      a.lamports = 2'039'280;
      a.owner = solana::TokenProgram();
      a.data.assign(solana::kTokenAccountSize, 0);
      std::copy(mint_.begin(), mint_.end(), a.data.begin());
      std::copy(t->second.owner.begin(), t->second.owner.end(), a.data.begin() + 32);
      for (int i = 0; i < 8; ++i)
        a.data[64 + i] = static_cast<uint8_t>(t->second.amount >> (8 * i));
      a.data[108] = 1;
      return std::optional<solana::AccountInfo>(a);
    }
    if (auto w = lamports_.find(address); w != lamports_.end()) {
      solana::AccountInfo a;
      a.lamports = w->second;
      a.owner = solana::SystemProgram();
      return std::optional<solana::AccountInfo>(a);
    }
    return std::optional<solana::AccountInfo>();
  }
  StatusOr<std::vector<solana::SignatureInfo>> SignaturesForAddress(const Pubkey&, int,
                                                                    std::optional<std::string>,
                                                                    std::string_view) override {
    return Internal("not used by payouts");
  }
  StatusOr<std::optional<solana::TransactionInfo>> GetTransaction(const std::string&,
                                                                  std::string_view) override {
    return Internal("not used by payouts");
  }

 private:
  struct Token {
    Pubkey owner;
    uint64_t amount = 0;
  };
  void NewBlockhash() REQUIRES(mu_) {
    ++blockhash_seq_;
    blockhash_ = {};
    for (int i = 0; i < 8; ++i) blockhash_[i] = static_cast<uint8_t>(blockhash_seq_ >> (8 * i));
    blockhash_[31] = 7;
    blockhash_height_ = height_;
  }

  const Pubkey mint_;
  Mutex mu_;
  std::map<Pubkey, uint64_t> lamports_ GUARDED_BY(mu_);
  std::map<Pubkey, Token> tokens_ GUARDED_BY(mu_);
  std::map<std::string, uint64_t> landed_ GUARDED_BY(mu_);
  std::map<std::string, std::string> memos_ GUARDED_BY(mu_);
  Pubkey blockhash_ GUARDED_BY(mu_){};
  uint64_t blockhash_seq_ GUARDED_BY(mu_) = 0;
  uint64_t blockhash_height_ GUARDED_BY(mu_) = 0;
  uint64_t height_ GUARDED_BY(mu_) = 1000;
  uint64_t slot_ GUARDED_BY(mu_) = 5000;
  int drop_ GUARDED_BY(mu_) = 0;
  bool hold_ GUARDED_BY(mu_) = false;
  int sends_ GUARDED_BY(mu_) = 0;
};

// A Database that runs `before_next_write` once, just before its next Transact: another
// request's write that lands between a request's read and its own write transaction.
class InterleavingDatabase final : public store::Database {
 public:
  explicit InterleavingDatabase(store::Database& base) : base_(base) {}

  std::function<void()> before_next_write;

  store::BackendKind Backend() const override { return base_.Backend(); }
  Status Transact(const std::function<Status(store::Tx&)>& fn) override {
    if (auto f = std::exchange(before_next_write, nullptr)) f();
    return base_.Transact(fn);
  }
  Status Read(const std::function<Status(store::Tx&)>& fn) override { return base_.Read(fn); }
  Status Ping() override { return base_.Ping(); }
  StatusOr<std::unique_ptr<store::Lock>> TryLock(std::string_view name) override {
    return base_.TryLock(name);
  }

 private:
  store::Database& base_;
};

// A monday: runs are made for 2026-12-07.
constexpr const char* kMonday = "2026-12-07";

class PayoutsTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    clock_.Set(*ParseRfc3339("2026-12-07T06:00:00Z"));
    accounts_ = std::make_unique<accounts::Accounts>(db(), FastAccountsOptions());
    auto admin = accounts_->CreateAdmin("admin@example.com", "admin-password-1", "Ada Admin");
    ASSERT_TRUE(admin.ok());
    admin_ = admin->id;
    auto customer =
        accounts_->SignUp({"carl@example.com", "customer-password", "Carl"}, "192.0.2.9");
    ASSERT_TRUE(customer.ok());
    customer_ = customer->id;
    mint_ = solana::KeypairFromSeed(Seed(200)).public_key;
    platform_key_ = solana::KeypairFromSeed(Seed(1));
    chain_ = std::make_unique<FakeChain>(mint_);
    chain_->Fund(platform_key_.public_key, 10'000'000'000, 1'000'000 * kUsdc);
    Restart();
  }
  void TearDown() override {
    payouts_.reset();
    PlatformTest::TearDown();
  }

  static std::array<uint8_t, 32> Seed(uint8_t b) {
    std::array<uint8_t, 32> s{};
    s.fill(b);
    return s;
  }

  PayoutsOptions Options() {
    PayoutsOptions o;
    o.solana_chain.mint = mint_;
    o.solana_chain.commitment = "confirmed";
    o.sepa_originator = {"gpunex Operations SRL", "IT60X0542811101000000123456", "BPMOIT22"};
    o.ach_originator = {"021000021",  "JPMORGAN CHASE", "1234567890", "GPUNEX INC",
                        "GPUNEX INC", "1234567890",     "011000015"};
    o.automatic_runs = false;
    o.resend_after_ms = 0;
    o.clock = &clock_;
    o.fault = [this](std::string_view point) -> Status {
      if (point == crash_at_ && crash_times_ > 0) {
        --crash_times_;
        return Aborted("crash injected at " + std::string(point));
      }
      return Status::Ok();
    };
    return o;
  }
  // A new gpunexd over the same database and chain.
  void Restart(PayoutsOptions o) {
    payouts_.reset();
    payouts_ = std::make_unique<Payouts>(faulty(), *accounts_, chain_.get(), &platform_key_, o);
  }
  void Restart() { Restart(Options()); }

  std::string NewProvider(const std::string& name) {
    std::string email = name + "@example.com";
    auto u = accounts_->SignUp({email, "provider-password", name}, "192.0.2.8");
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    EXPECT_TRUE(db().Transact([&](store::Tx& tx) {
                      return providers::UpsertProvider(tx, clock_.Now(), u->id,
                                                       providers::Tier::kCommunity, NewId("app"),
                                                       admin_);
                    })
                    .ok());
    return u->id;
  }
  accounts::Principal Session(const std::string& id) { return As(id); }

  // Usage credited to the provider 2 days ago, released (available now). Each one a
  // microsecond after the last: earnings are released in time order.
  void Earn(const std::string& provider, int64_t micros) {
    const Timestamp at = std::max(clock_.Now() - 48 * kOneHour, last_earned_ + Duration(1));
    last_earned_ = at;
    const std::string n = NewId("t");
    ASSERT_TRUE(
        db().Transact([&](store::Tx& tx) -> Status {
              GPUNEX_RETURN_IF_ERROR(
                  billing::Post(
                      tx, {{n + "c", "operator_credit", std::string(billing::kWorldOperator),
                            billing::CustomerAccount(customer_), Usdc::Micros(micros), std::nullopt,
                            "", at},
                           {n + "u", "usage_provider", billing::CustomerAccount(customer_),
                            billing::ProviderPendingAccount(provider), Usdc::Micros(micros),
                            std::nullopt, "", at}})
                      .status());
              return billing::ReleaseEarnings(tx, at, clock_.Now()).status();
            })
            .ok());
  }

  Pubkey Wallet(uint8_t seed) { return solana::KeypairFromSeed(Seed(seed)).public_key; }

  void SetMethod(const std::string& provider, Method m) {
    SettingsUpdate u;
    u.method = std::move(m);
    u.password = "provider-password";
    auto s = payouts_->PutSettings(Session(provider), u);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  Method Solana(uint8_t seed) {
    Method m;
    m.kind = MethodKind::kSolana;
    m.wallet = solana::ToBase58(Wallet(seed));
    return m;
  }
  static Method Sepa(std::string iban) {
    Method m;
    m.kind = MethodKind::kSepa;
    m.holder = "Pia Rossi";
    m.iban = std::move(iban);
    return m;
  }
  static Method Ach() {
    Method m;
    m.kind = MethodKind::kAch;
    m.holder = "Oscar Smith";
    m.routing_number = "011000015";
    m.account_number = "000123456789";
    m.account_type = "checking";
    return m;
  }

  StatusOr<payouts::Run> Start(const std::string& as_of = kMonday,
                               const std::string& schedule = "weekly",
                               std::optional<int64_t> rate = std::nullopt) {
    return payouts_->StartRun(Session(admin_), {as_of, schedule, rate});
  }
  // Ticks until two ticks in a row change nothing (a resent transaction changes no
  // state: it lands by the next one), at most `limit` ticks.
  Status TickUntilQuiet(int limit = 20) {
    int quiet = 0;
    for (int i = 0; i < limit && quiet < 2; ++i) {
      auto n = payouts_->Tick();
      if (!n.ok()) return n.status();
      quiet = *n == 0 ? quiet + 1 : 0;
    }
    return Status::Ok();
  }
  RunDetail Detail(const std::string& run_id) {
    auto d = payouts_->GetRun(Session(admin_), run_id);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (getenv("DEBUG_PAYOUTS") && d.ok()) {
      for (const auto& [k, v] : d->run.counts)
        fprintf(stderr, "count %s=%lld\n", k.c_str(), (long long)v);
      for (const auto& p : d->payouts)
        fprintf(stderr, "payout %s %s %s %lld\n", p.id.c_str(),
                std::string(Name(p.method.kind)).c_str(), std::string(Name(p.state)).c_str(),
                (long long)p.amount.micros());
    }
    return d.ok() ? *d : RunDetail{};
  }
  int64_t BalanceOf(const std::string& account) {
    return Number("SELECT COALESCE(MAX(balance), 0) FROM ledger_accounts WHERE id = ?", {account});
  }
  void ExpectLedgerSumsToZero() {
    EXPECT_EQ(Number("SELECT COALESCE(SUM(balance), 0) FROM ledger_accounts"), 0);
  }

  std::unique_ptr<accounts::Accounts> accounts_;
  std::string admin_, customer_;
  Pubkey mint_{};
  solana::Keypair platform_key_{};
  std::unique_ptr<FakeChain> chain_;
  std::unique_ptr<Payouts> payouts_;
  std::string crash_at_;
  int crash_times_ = 0;
  Timestamp last_earned_{};
};

TEST_P(PayoutsTest, AWeeklyRunPaysEligibleProvidersOnceAndCarriesTheOthersOver) {
  const std::string pia = NewProvider("pia"), oscar = NewProvider("oscar"),
                    nora = NewProvider("nora");
  SetMethod(pia, Solana(11));
  SetMethod(oscar, Solana(12));
  Earn(pia, 62'500'000);    // above the 50 USDC threshold
  Earn(oscar, 20'000'000);  // below: carried over
  Earn(nora, 80'000'000);   // no method
  EXPECT_FALSE(chain_->HasTokenAccount(Wallet(11)));

  auto run = Start();
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(Name(run->state), "planning");
  ASSERT_TRUE(TickUntilQuiet().ok());

  RunDetail d = Detail(run->id);
  EXPECT_EQ(Name(d.run.state), "done");
  ASSERT_EQ(d.payouts.size(), 1u);
  const Payout& po = d.payouts[0];
  EXPECT_EQ(po.provider_id, pia);
  EXPECT_EQ(Name(po.state), "confirmed");
  EXPECT_EQ(po.amount.micros(), 62'500'000);
  ASSERT_TRUE(po.signature.has_value());
  EXPECT_EQ(d.run.counts["carried_over"], 1);
  EXPECT_EQ(d.run.counts["no_method"], 1);
  // The associated token account was created by the payout itself.
  EXPECT_EQ(chain_->UsdcOf(Wallet(11)), 62'500'000u);
  EXPECT_EQ(chain_->LandedFor(po.id), 1);
  EXPECT_EQ(BalanceOf(billing::ProviderPaidAccount(pia)), 62'500'000);
  EXPECT_EQ(BalanceOf(billing::ProviderAvailableAccount(pia)), 0);
  EXPECT_EQ(BalanceOf(billing::ProviderInPaymentAccount(pia)), 0);
  EXPECT_EQ(BalanceOf(billing::ProviderAvailableAccount(oscar)), 20'000'000);
  ExpectLedgerSumsToZero();
  // The provider was told, by email too.
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND kind = 'payouts.paid'",
                   {pia}),
            1);

  // The same run again is the same run: nobody is paid twice.
  auto again = Start();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, run->id);
  ASSERT_TRUE(TickUntilQuiet().ok());
  EXPECT_EQ(chain_->UsdcOf(Wallet(11)), 62'500'000u);

  // The carried-over balance is paid once it reaches the threshold.
  Earn(oscar, 31'000'000);
  clock_.Advance(7 * kOneDay);
  auto next = Start("2026-12-14");
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(TickUntilQuiet().ok());
  EXPECT_EQ(chain_->UsdcOf(Wallet(12)), 51'000'000u);
}

TEST_P(PayoutsTest, EveryCrashPointResumesWithoutPayingTwice) {
  const std::vector<std::string> points = {"payout.after_plan", "payout.after_sign",
                                           "payout.after_send", "payout.before_confirm",
                                           "payout.after_confirm"};
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string& point = points[i];
    SCOPED_TRACE(point);
    const std::string p = NewProvider("p" + std::to_string(i));
    const uint8_t seed = static_cast<uint8_t>(30 + i);
    SetMethod(p, Solana(seed));
    Earn(p, 70'000'000);
    const uint64_t before = chain_->UsdcOf(Wallet(seed));
    crash_at_ = point;
    crash_times_ = 1;
    auto run = Start(DateOf(LatestRunDate(Schedule::kWeekly, clock_.Now(), BusinessCalendar())));
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    // The step comes in the first tick or a later one: run until it crashes.
    bool crashed = false;
    for (int t = 0; t < 5 && !crashed; ++t) crashed = !payouts_->Tick().ok();
    EXPECT_TRUE(crashed) << "the crash was not reached";
    Restart();  // the process is gone: a new one resumes
    ASSERT_TRUE(TickUntilQuiet().ok());
    ASSERT_TRUE(TickUntilQuiet().ok());
    RunDetail d = Detail(run->id);
    ASSERT_EQ(d.payouts.size(), 1u);
    EXPECT_EQ(Name(d.payouts[0].state), "confirmed");
    EXPECT_EQ(chain_->UsdcOf(Wallet(seed)) - before, 70'000'000u);
    EXPECT_EQ(chain_->LandedFor(d.payouts[0].id), 1);
    EXPECT_EQ(BalanceOf(billing::ProviderPaidAccount(p)), 70'000'000);
    ExpectLedgerSumsToZero();
    clock_.Advance(7 * kOneDay);
  }
}

TEST_P(PayoutsTest, ADroppedTransactionIsResentAsItIsUntilItsBlockhashExpires) {
  const std::string pia = NewProvider("pia");
  SetMethod(pia, Solana(11));
  Earn(pia, 55'000'000);
  chain_->DropNextSends(2);  // the first send and its first resend are lost
  auto run = Start();
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(payouts_->Tick().ok());  // plans, signs, sends (dropped)
  RunDetail d = Detail(run->id);
  ASSERT_EQ(d.payouts.size(), 1u);
  EXPECT_EQ(Name(d.payouts[0].state), "submitted");
  ASSERT_TRUE(payouts_->Tick().ok());  // not found, still valid: resent (dropped again)
  ASSERT_TRUE(payouts_->Tick().ok());  // resent: lands
  ASSERT_TRUE(TickUntilQuiet().ok());
  auto po = payouts_->ProviderPayout(Session(pia), d.payouts[0].id);
  ASSERT_TRUE(po.ok()) << po.status().ToString();
  EXPECT_EQ(Name(po->first.state), "confirmed");
  EXPECT_EQ(po->first.attempts.size(), 1u);  // one signature all along
  EXPECT_EQ(chain_->LandedFor(po->first.id), 1);
  EXPECT_EQ(chain_->UsdcOf(Wallet(11)), 55'000'000u);
}

TEST_P(PayoutsTest, AnExpiredBlockhashIsSignedAgainOnlyOnceTheFirstCanNoLongerLand) {
  const std::string pia = NewProvider("pia");
  SetMethod(pia, Solana(11));
  Earn(pia, 55'000'000);
  crash_at_ = "payout.after_sign";  // signed and recorded, never sent
  crash_times_ = 1;
  auto run = Start();
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(payouts_->Tick().ok());
  Restart();
  chain_->HoldConfirmations(false);
  // Still within its blockhash's life: the recorded transaction is sent as it is.
  ASSERT_TRUE(TickUntilQuiet().ok());
  auto d = Detail(run->id);
  ASSERT_EQ(d.payouts.size(), 1u);
  auto po = payouts_->ProviderPayout(Session(pia), d.payouts[0].id);
  ASSERT_TRUE(po.ok()) << po.status().ToString();
  EXPECT_EQ(Name(po->first.state), "confirmed");
  EXPECT_EQ(po->first.attempts.size(), 1u);

  // A second provider whose first transaction is dropped and whose blockhash then expires.
  const std::string oscar = NewProvider("oscar");
  SetMethod(oscar, Solana(12));
  Earn(oscar, 52'000'000);
  clock_.Advance(7 * kOneDay);
  chain_->DropNextSends(100);
  auto run2 = Start("2026-12-14");
  ASSERT_TRUE(run2.ok());
  ASSERT_TRUE(payouts_->Tick().ok());
  ASSERT_TRUE(payouts_->Tick().ok());
  EXPECT_EQ(Name(Detail(run2->id).payouts[0].state), "submitted");
  chain_->DropNextSends(0);
  chain_->ExpireBlockhash();  // the first can no longer land: a new one is signed
  ASSERT_TRUE(TickUntilQuiet().ok());
  auto po2 = payouts_->ProviderPayout(Session(oscar), Detail(run2->id).payouts[0].id);
  ASSERT_TRUE(po2.ok());
  EXPECT_EQ(Name(po2->first.state), "confirmed");
  ASSERT_EQ(po2->first.attempts.size(), 2u);
  EXPECT_EQ(Name(po2->first.attempts[0].state), "expired");
  EXPECT_EQ(Name(po2->first.attempts[1].state), "landed");
  EXPECT_EQ(chain_->LandedFor(po2->first.id), 1);
  EXPECT_EQ(chain_->UsdcOf(Wallet(12)), 52'000'000u);
}

TEST_P(PayoutsTest, AProcessedTransactionIsNotPaidUntilItReachesTheCommitment) {
  const std::string pia = NewProvider("pia");
  SetMethod(pia, Solana(11));
  Earn(pia, 55'000'000);
  chain_->HoldConfirmations(true);
  auto run = Start();
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(TickUntilQuiet(5).ok());
  EXPECT_EQ(Name(Detail(run->id).payouts[0].state), "submitted");
  EXPECT_EQ(BalanceOf(billing::ProviderInPaymentAccount(pia)), 55'000'000);
  chain_->HoldConfirmations(false);
  ASSERT_TRUE(TickUntilQuiet().ok());
  EXPECT_EQ(Name(Detail(run->id).payouts[0].state), "confirmed");
  EXPECT_EQ(chain_->sends(), 1);  // followed, never signed again
}

TEST_P(PayoutsTest, AShortWalletMakesPayoutsWaitAndTellsAdminsOnce) {
  // A platform wallet with 60 USDC for two payouts of 55.
  platform_key_ = solana::KeypairFromSeed(Seed(2));
  chain_->Fund(platform_key_.public_key, 1'000'000'000, 60 * kUsdc);
  Restart();
  const std::string pia = NewProvider("pia"), oscar = NewProvider("oscar");
  SetMethod(pia, Solana(11));
  SetMethod(oscar, Solana(12));
  Earn(pia, 55'000'000);
  Earn(oscar, 55'000'000);
  auto run = Start();
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(TickUntilQuiet().ok());
  RunDetail d = Detail(run->id);
  EXPECT_EQ(d.run.counts["confirmed"], 1);
  EXPECT_EQ(d.run.counts["waiting_funds"], 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND "
                   "kind = 'payouts.wallet_short'",
                   {admin_}),
            1);
  auto w = payouts_->Wallet(Session(admin_));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->short_of_funds);
  EXPECT_EQ(w->needed_micro, 55'000'000);
  chain_->Fund(platform_key_.public_key, 0, 100 * kUsdc);
  ASSERT_TRUE(TickUntilQuiet().ok());
  EXPECT_EQ(Name(Detail(run->id).run.state), "done");
  EXPECT_EQ(chain_->UsdcOf(Wallet(11)) + chain_->UsdcOf(Wallet(12)), 110'000'000u);
}

TEST_P(PayoutsTest, BankPayoutsAreWrittenToValidFilesAndSettledByTheOperator) {
  const std::string pia = NewProvider("pia"), oscar = NewProvider("oscar");
  SetMethod(pia, Sepa("DE89 3704 0044 0532 0130 00"));
  SetMethod(oscar, Ach());
  Earn(pia, 100'123'456);  // 100.12 USDC paid: the bank pays whole cents
  Earn(oscar, 75'000'000);
  auto run = Start(kMonday, "weekly", 920'000);  // 0.92 EUR per USDC
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(TickUntilQuiet().ok());
  RunDetail d = Detail(run->id);
  EXPECT_EQ(Name(d.run.state), "waiting");
  ASSERT_EQ(d.run.files.size(), 2u);
  auto sepa = payouts_->File(Session(admin_), run->id, run->id + "-sepa.xml");
  ASSERT_TRUE(sepa.ok()) << sepa.status().ToString();
  EXPECT_TRUE(bank::ValidatePain001(sepa->content).ok());
  EXPECT_EQ(sepa->total_minor, 9211);  // 100.12 USDC × 0.92 = 92.11 EUR
  EXPECT_NE(sepa->content.find("<InstdAmt Ccy=\"EUR\">92.11</InstdAmt>"), std::string::npos);
  auto ach = payouts_->File(Session(admin_), run->id, run->id + "-ach.txt");
  ASSERT_TRUE(ach.ok());
  auto parsed = bank::ParseNacha(ach->content);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->total_credit_cents, 7500);
  EXPECT_EQ(BalanceOf(billing::ProviderAvailableAccount(pia)), 3456);  // the sub-cent rest

  // Sent to the bank; the bank pays one line and returns the other.
  ASSERT_TRUE(payouts_->MarkFileSent(Session(admin_), run->id, run->id + "-sepa.xml").ok());
  ASSERT_TRUE(payouts_->MarkFileSent(Session(admin_), run->id, run->id + "-ach.txt").ok());
  std::string sepa_id, ach_id;
  for (const auto& po : Detail(run->id).payouts) {
    EXPECT_EQ(Name(po.state), "submitted");
    (po.method.kind == MethodKind::kSepa ? sepa_id : ach_id) = po.id;
  }
  EXPECT_EQ(payouts_->SetBankResult(Session(admin_), sepa_id, {BankOutcome::kFailed, "", ""})
                .status()
                .code(),
            StatusCode::kValidationFailed);  // a reason is needed
  ASSERT_TRUE(
      payouts_->SetBankResult(Session(admin_), sepa_id, {BankOutcome::kPaid, "BANKREF-1", ""})
          .ok());
  ASSERT_TRUE(
      payouts_->SetBankResult(Session(admin_), ach_id, {BankOutcome::kFailed, "", "R03 no account"})
          .ok());
  EXPECT_EQ(BalanceOf(billing::ProviderPaidAccount(pia)), 100'120'000);
  EXPECT_EQ(BalanceOf(billing::ProviderAvailableAccount(oscar)), 75'000'000);  // back
  EXPECT_EQ(Name(Detail(run->id).run.state), "done");
  ExpectLedgerSumsToZero();

  // An admin retries the returned ACH payout: a new file of its own.
  auto retried = payouts_->Retry(Session(admin_), ach_id);
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  ASSERT_TRUE(TickUntilQuiet().ok());
  d = Detail(run->id);
  EXPECT_EQ(d.run.files.size(), 3u);
  EXPECT_EQ(BalanceOf(billing::ProviderInPaymentAccount(oscar)), 75'000'000);
  // Providers and customers cannot do any of this.
  EXPECT_EQ(payouts_->Retry(Session(pia), ach_id).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(payouts_->File(Session(pia), run->id, run->id + "-ach.txt").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(payouts_->ProviderPayout(Session(pia), ach_id).status().code(), StatusCode::kNotFound);
}

TEST_P(PayoutsTest, AChangeOfDetailsNeedsThePasswordAndHoldsPayoutsFor48Hours) {
  const std::string pia = NewProvider("pia");
  SettingsUpdate u;
  u.method = Solana(11);
  auto no_password = payouts_->PutSettings(Session(pia), u);
  ASSERT_EQ(no_password.status().code(), StatusCode::kValidationFailed);
  EXPECT_EQ(no_password.status().fields().count("password"), 1u);
  u.password = "wrong-password";
  EXPECT_EQ(payouts_->PutSettings(Session(pia), u).status().fields().count("password"), 1u);
  u.password = "provider-password";
  auto first = payouts_->PutSettings(Session(pia), u);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->settings.hold_until.has_value());  // a first method is not a redirection
  EXPECT_EQ(first->token_account,
            solana::ToBase58(solana::AssociatedTokenAddress(Wallet(11), mint_)));
  // The schedule alone needs no password.
  SettingsUpdate sched;
  sched.schedule = "monthly";
  ASSERT_TRUE(payouts_->PutSettings(Session(pia), sched).ok());
  sched.schedule = "weekly";
  ASSERT_TRUE(payouts_->PutSettings(Session(pia), sched).ok());

  u.method = Solana(12);
  auto changed = payouts_->PutSettings(Session(pia), u);
  ASSERT_TRUE(changed.ok());
  ASSERT_TRUE(changed->settings.hold_until.has_value());
  EXPECT_EQ(*changed->settings.hold_until, clock_.Now() + 48 * kOneHour);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE to_addr LIKE 'pia@%' AND "
                   "subject LIKE '%payout method%'"),
            2);
  // Held: the run skips the provider, and pays once the hold is over.
  Earn(pia, 60'000'000);
  auto run = Start();
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(TickUntilQuiet().ok());
  EXPECT_EQ(Detail(run->id).run.counts["held"], 1);
  clock_.Advance(7 * kOneDay);
  ASSERT_TRUE(Start("2026-12-14").ok());
  ASSERT_TRUE(TickUntilQuiet().ok());
  EXPECT_EQ(chain_->UsdcOf(Wallet(12)), 60'000'000u);
  EXPECT_EQ(chain_->UsdcOf(Wallet(11)), 0u);

  // An API key cannot redirect money.
  accounts::Principal key = Session(pia);
  key.via = accounts::Principal::Via::kApiKey;
  u.method = Solana(13);
  EXPECT_EQ(payouts_->PutSettings(key, u).status().code(), StatusCode::kPermissionDenied);
}

// Issue 24: a request that re-sends the current method needs no password, but the owner's
// change may commit between its read and its write. It must not write the old method back
// (nor reset the hold): it is decided again on what the transaction found, and refused.
TEST_P(PayoutsTest, ReSendingTheOldMethodCannotUndoTheOwnersChange) {
  const std::string pia = NewProvider("pia");
  SetMethod(pia, Solana(11));
  InterleavingDatabase interleaved(faulty());
  Payouts racer(interleaved, *accounts_, chain_.get(), &platform_key_, Options());
  std::optional<StatusOr<SettingsView>> owners;
  auto owner_changes_to = [&](Method m) {
    return [this, &owners, pia, m] {
      SettingsUpdate u;
      u.method = m;
      u.password = "provider-password";
      owners = payouts_->PutSettings(Session(pia), u);
      clock_.Advance(Seconds(5));  // a hold set again later would show
    };
  };
  auto stored = [&] { return payouts_->GetSettings(Session(pia)).value().settings; };

  // A session re-sending wallet 11 (with the schedule) while the owner moves to wallet 12.
  interleaved.before_next_write = owner_changes_to(Solana(12));
  SettingsUpdate again;
  again.method = Solana(11);
  again.schedule = "monthly";
  auto raced = racer.PutSettings(Session(pia), again);
  ASSERT_TRUE(owners.has_value() && owners->ok());
  ASSERT_EQ(raced.status().code(), StatusCode::kValidationFailed) << raced.status().ToString();
  EXPECT_EQ(raced.status().fields().count("password"), 1u);
  Settings now = stored();
  EXPECT_EQ(now.method, (*owners)->settings.method);
  EXPECT_EQ(now.method->wallet, Solana(12).wallet);
  EXPECT_EQ(now.hold_until, (*owners)->settings.hold_until) << "the hold was not reset";
  EXPECT_EQ(Name(now.schedule), "weekly") << "a refused request writes nothing";

  // The same through an API key: refused as an API key changing the method would be.
  interleaved.before_next_write = owner_changes_to(Solana(13));
  accounts::Principal key = Session(pia);
  key.via = accounts::Principal::Via::kApiKey;
  again.method = Solana(12);
  EXPECT_EQ(racer.PutSettings(key, again).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(stored().method->wallet, Solana(13).wallet);

  // With a wrong password: decided again, the password checked and refused.
  interleaved.before_next_write = owner_changes_to(Solana(14));
  again.method = Solana(13);
  again.password = "wrong-password";
  EXPECT_EQ(racer.PutSettings(Session(pia), again).status().fields().count("password"), 1u);
  EXPECT_EQ(stored().method->wallet, Solana(14).wallet);

  // With the right password it is a change of its own, made after the owner's.
  interleaved.before_next_write = owner_changes_to(Solana(15));
  again.method = Solana(14);
  again.password = "provider-password";
  auto changed = racer.PutSettings(Session(pia), again);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->settings.method->wallet, Solana(14).wallet);
  EXPECT_EQ(Name(changed->settings.schedule), "monthly");
  EXPECT_EQ(*changed->settings.hold_until, clock_.Now() + 48 * kOneHour);
  // One notice per change that was made: the first method and four changes.
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE to_addr LIKE 'pia@%' AND "
                   "subject LIKE '%payout method%'"),
            6);

  // Without a race, re-sending the current method still needs no password.
  SettingsUpdate same;
  same.method = Solana(14);
  same.schedule = "weekly";
  auto plain = racer.PutSettings(Session(pia), same);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->settings.hold_until, changed->settings.hold_until);
}

TEST_P(PayoutsTest, WalletsThatPayNobodyAreRefused) {
  const std::string pia = NewProvider("pia");
  // The message says what the address is; a program id off the curve (or of small order,
  // the System program) is refused for that, as before.
  const std::string kProgram = "not a wallet|ed25519";
  std::vector<std::pair<std::string, std::string>> cases = {
      {solana::ToBase58(platform_key_.public_key), "platform's own"},
      {solana::ToBase58(mint_), "USDC mint"},
      {solana::ToBase58(solana::TokenProgram()), kProgram},
      {solana::ToBase58(solana::Token2022Program()), kProgram},
      {solana::ToBase58(solana::AssociatedTokenProgram()), kProgram},
      {solana::ToBase58(solana::MemoProgram()), kProgram},
      {"Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", kProgram},
      {"ComputeBudget111111111111111111111111111111", kProgram},
      {"SysvarRent111111111111111111111111111111111", kProgram},
      {"1nc1nerator11111111111111111111111111111111", kProgram},
      {solana::ToBase58(solana::SystemProgram()), "small order"},
  };
  for (const auto& [wallet, why] : cases) {
    SettingsUpdate u;
    u.method = Method{};
    u.method->kind = MethodKind::kSolana;
    u.method->wallet = wallet;
    u.password = "provider-password";
    auto r = payouts_->PutSettings(Session(pia), u);
    ASSERT_EQ(r.status().code(), StatusCode::kValidationFailed) << wallet;
    ASSERT_EQ(r.status().fields().count("method.wallet"), 1u) << wallet;
    const std::string message = r.status().fields().at("method.wallet");
    bool says_why = false;
    for (size_t from = 0; from <= why.size();) {
      const size_t bar = std::min(why.find('|', from), why.size());
      says_why = says_why || message.find(why.substr(from, bar - from)) != std::string::npos;
      from = bar + 1;
    }
    EXPECT_TRUE(says_why) << wallet << ": " << message;
  }
  EXPECT_EQ(Number("SELECT COUNT(*) FROM payout_settings"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE subject LIKE '%payout method%'"), 0);
  SetMethod(pia, Solana(11));  // a wallet of its own is fine
}

TEST_P(PayoutsTest, BadSettingsNameTheirFieldAndChangeNothing) {
  const std::string pia = NewProvider("pia");
  struct Case {
    Method m;
    const char* field;
  };
  Method pda;
  pda.kind = MethodKind::kSolana;
  pda.wallet = solana::ToBase58(solana::AssociatedTokenAddress(Wallet(11), mint_));  // off curve
  Method bad_chars = pda;
  bad_chars.wallet = "0OIl" + std::string(40, '1');
  Method bad_iban = Sepa("DE89370400440532013001");
  Method us_iban = Sepa("US12345678901234567890");
  Method bad_routing = Ach();
  bad_routing.routing_number = "021000022";
  Method bad_type = Ach();
  bad_type.account_type = "brokerage";
  for (const auto& c : std::vector<Case>{{pda, "method.wallet"},
                                         {bad_chars, "method.wallet"},
                                         {bad_iban, "method.iban"},
                                         {us_iban, "method.iban"},
                                         {bad_routing, "method.routing_number"},
                                         {bad_type, "method.account_type"}}) {
    SettingsUpdate u;
    u.method = c.m;
    u.password = "provider-password";
    auto r = payouts_->PutSettings(Session(pia), u);
    ASSERT_EQ(r.status().code(), StatusCode::kValidationFailed) << c.field;
    EXPECT_EQ(r.status().fields().count(c.field), 1u) << c.field << ": " << r.status().ToString();
  }
  SettingsUpdate t;
  t.threshold_micro = 1;
  EXPECT_EQ(payouts_->PutSettings(Session(pia), t).status().fields().count("threshold_micro"), 1u);
  t.threshold_micro.reset();
  t.schedule = "daily";
  EXPECT_EQ(payouts_->PutSettings(Session(pia), t).status().fields().count("schedule"), 1u);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM payout_settings"), 0);
  // Customers have no payout settings.
  EXPECT_EQ(payouts_->GetSettings(Session(customer_)).status().code(),
            StatusCode::kPermissionDenied);
}

TEST_P(PayoutsTest, RunDatesAreCheckedAndOnlyAdminsStartRuns) {
  EXPECT_EQ(Start("2026-12-08").status().fields().count("as_of"), 1u);  // a Tuesday
  EXPECT_EQ(Start("2026-12-14").status().fields().count("as_of"), 1u);  // the future
  EXPECT_EQ(Start("2026-12-01", "monthly").ok(), true);                 // a Tuesday, 1st
  EXPECT_EQ(Start("2026-11-02", "yearly").status().fields().count("schedule"), 1u);
  EXPECT_EQ(
      payouts_->StartRun(Session(customer_), {kMonday, "weekly", std::nullopt}).status().code(),
      StatusCode::kPermissionDenied);
}

TEST_P(PayoutsTest, OneInstanceCarriesRunsForwardAtATime) {
  auto lock = db().TryLock("payouts.run");
  ASSERT_TRUE(lock.ok());
  ASSERT_NE(*lock, nullptr);
  EXPECT_EQ(db().TryLock("payouts.run").value(), nullptr);
  const std::string pia = NewProvider("pia");
  SetMethod(pia, Solana(11));
  Earn(pia, 55'000'000);
  ASSERT_TRUE(Start().ok());
  auto n = payouts_->Tick();  // someone else holds the lock: nothing happens
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(chain_->sends(), 0);
  lock->reset();
  ASSERT_TRUE(TickUntilQuiet().ok());
  EXPECT_EQ(chain_->UsdcOf(Wallet(11)), 55'000'000u);
}

GPUNEX_INSTANTIATE_BACKENDS(PayoutsTest);

TEST(PayoutStatesTest, APayoutMovesOnlyAsTheStateMachineSays) {
  using enum PayoutState;
  static_assert(PayoutMayGo(kPlanned, kSubmitted));
  static_assert(PayoutMayGo(kPlanned, kWaitingFunds));
  static_assert(PayoutMayGo(kWaitingFunds, kSubmitted));
  static_assert(PayoutMayGo(kWaitingFunds, kPlanned));
  static_assert(PayoutMayGo(kSubmitted, kConfirmed));
  static_assert(PayoutMayGo(kSubmitted, kFailed));
  static_assert(PayoutMayGo(kSubmitted, kPlanned));  // expired unlanded: signed again
  static_assert(PayoutMayGo(kFailed, kPlanned));     // an admin's retry
  static_assert(!PayoutMayGo(kPlanned, kConfirmed));
  static_assert(!PayoutMayGo(kPlanned, kFailed));
  static_assert(!PayoutMayGo(kConfirmed, kPlanned));
  static_assert(!PayoutMayGo(kConfirmed, kFailed));
  static_assert(!PayoutMayGo(kFailed, kConfirmed));
  static_assert(!PayoutMayGo(kSubmitted, kSubmitted));
}

TEST(PayoutStatesTest, ARunIsPlannedOnceAndRunsAgainOnlyForARetry) {
  using enum RunState;
  static_assert(RunMayGo(kPlanning, kRunning));
  static_assert(RunMayGo(kRunning, kWaiting));
  static_assert(RunMayGo(kWaiting, kRunning));
  static_assert(RunMayGo(kRunning, kDone));
  static_assert(RunMayGo(kWaiting, kDone));
  static_assert(RunMayGo(kDone, kRunning));  // a failed payout retried
  static_assert(!RunMayGo(kPlanning, kDone));
  static_assert(!RunMayGo(kRunning, kPlanning));
  static_assert(!RunMayGo(kDone, kWaiting));
  static_assert(!RunMayGo(kRunning, kRunning));
  static_assert(IsSpentAttemptState(AttemptState::kFailed));
  static_assert(IsSpentAttemptState(AttemptState::kExpired));
  static_assert(!IsSpentAttemptState(AttemptState::kSent));
}

// Each enumerator of a table has its own name, which reads back as itself; the names are
// those the API and the database have always used.
TEST(PayoutNamesTest, EachValueHasOneNameForTheWireAndTheDatabase) {
  using gpunex::testing::ExpectEachNameReadsBack;
  ExpectEachNameReadsBack(kScheduleNames, Schedule::kMonthly);
  ExpectEachNameReadsBack(kMethodKindNames, MethodKind::kAch);
  ExpectEachNameReadsBack(kPayoutStateNames, PayoutState::kFailed);
  ExpectEachNameReadsBack(kAttemptStateNames, AttemptState::kExpired);
  ExpectEachNameReadsBack(kRunStateNames, RunState::kDone);
  ExpectEachNameReadsBack(kSkipReasonNames, SkipReason::kNoMethod);
  ExpectEachNameReadsBack(kFileKindNames, FileKind::kNacha);
  ExpectEachNameReadsBack(kFileStateNames, FileState::kSent);
  EXPECT_EQ(Name(PayoutState::kWaitingFunds), "waiting_funds");
  EXPECT_EQ(Name(SkipReason::kCarriedOver), "carried_over");
  EXPECT_EQ(Name(FileKind::kPain001), "pain.001");
  EXPECT_EQ(kMethodKindNames.Listed(), "\"solana\", \"sepa\" or \"ach\"");
  EXPECT_EQ(kScheduleNames.Parse("Weekly"), std::nullopt);
  EXPECT_THROW(kPayoutStateNames.ParseStored("sent"), std::invalid_argument);
}

}  // namespace
}  // namespace gpunex::platform::payouts
