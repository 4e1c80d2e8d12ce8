// Provider applications without HTTP, on both store backends: drafts of every shape
// saved and read back, lists that survive an unreadable row, the version 6 repair of rows
// release 0.1 stored, submission and review, business-day ages with a FakeClock, and
// decisions whose commit fails, is retried or ends in doubt.
#include "platform/applications/applications.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>

#include "common/ids.h"
#include "common/testing/fake_clock.h"
#include "platform/applications/applications_store.h"
#include "platform/catalog/catalog.h"
#include "platform/schema.h"
#include "platform/testing/platform_test.h"
// The other folders' migrations, for a schema these tables can live in. (Only their
// *Migrations() functions are used from these headers.)

namespace gpunex::platform::applications {
namespace {

using store::testing::TestDatabase;

std::vector<store::Migration> Schema() { return schema::AllMigrations(); }

std::vector<store::Migration> SchemaBefore(int version) {
  std::vector<store::Migration> out;
  for (store::Migration m : Schema()) {
    if (m.version < version) out.push_back(std::move(m));
  }
  return out;
}

// The text of the one row `sql` answers; "" otherwise.
// The body column as stored (the migration tests have no fixture).
std::string StoredBody(TestDatabase& db, const std::string& id) {
  auto rows = db.Query("SELECT body FROM provider_applications WHERE id = ?", {id});
  EXPECT_TRUE(rows.ok() && rows->size() == 1) << id << ": " << rows.status().ToString();
  return rows.ok() && rows->size() == 1 ? rows->front()["body"].Str() : "";
}

GpuEntry H100() {
  GpuEntry g;
  g.model = "h100-sxm-80gb";
  g.quantity = 8;
  g.system_ram_gb = 1024;
  g.upload_gbps = 10;
  g.download_gbps = 10;
  g.availability = Availability{};
  g.location = Location{"Milan", "IT", "eu-south"};
  return g;
}

GpuEntry OtherOnSchedule() {
  GpuEntry g;
  g.model = "other";
  g.model_other = "NVIDIA B200 192GB";
  g.quantity = 2;
  g.system_ram_gb = 256;
  g.upload_gbps = 2.5;
  g.download_gbps = 5;
  g.availability =
      Availability{false,
                   "Europe/Rome",
                   {{{"mon", "tue", "wed"}, "08:00", "20:00"}, {{"sat"}, "00:00", "24:00"}}};
  g.location = Location{"Turin", "IT", ""};
  return g;
}

ApplicationBody Complete(const std::string& email) {
  ApplicationBody b;
  b.contact = {"Ada Lovelace", email, "Analytical Engines DC"};
  b.gpus = {H100(), OtherOnSchedule()};
  b.infrastructure = {true, 12, "2-hour window on the first Sunday of each month"};
  return b;
}

class ApplicationsTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(catalog::SeedBuiltinModels(db(), clock_).ok());
    accounts_ = std::make_unique<accounts::Accounts>(db(), FastAccountsOptions());
    ApplicationsOptions o;
    o.public_url = "https://gpunex.test";
    o.mail_domain = "gpunex.test";
    o.calendar = BusinessCalendar::Create({}).value();
    o.clock = &clock_;
    o.wake_outbox = [this] { ++wakes_; };
    apps_ = std::make_unique<Applications>(faulty(), o);
    auto admin =
        accounts_->CreateAdmin("reviewer@example.com", "reviewer-password", "Rita Reviewer");
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = As(admin->id);
  }

  // A new applicant.
  accounts::Principal User(const std::string& name = "Ada Lovelace") {
    auto u =
        accounts_->SignUp({NewId("u") + "@example.com", "long-enough-password", name}, "192.0.2.7");
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    return As(u.ok() ? u->id : "");
  }

  // A submitted application of a new applicant.
  Application Submitted(const std::string& email = "ada.ops@example.net") {
    accounts::Principal u = User();
    auto a = apps_->Create(u, {Complete(email), true});
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : Application{};
  }

  std::vector<std::string> ListIds(const accounts::Principal& p, const std::string& status,
                                   int limit) {
    std::vector<std::string> ids;
    ListApplicationsRequest req{status, PageRequest{limit, std::nullopt}};
    for (int pages = 0; pages < 100; ++pages) {
      auto page = apps_->List(p, req);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (const Application& a : page->items) ids.push_back(a.id);
      if (!page->next) break;
      req.page.after = page->next;
    }
    return ids;
  }

  std::vector<std::string> Actions(const Application& a) {
    std::vector<std::string> out;
    for (const ApplicationEvent& e : a.history.value_or(std::vector<ApplicationEvent>{}))
      out.push_back(std::string(Name(e.action)));
    return out;
  }

  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<Applications> apps_;
  accounts::Principal admin_;
  std::atomic<int> wakes_{0};
};

// --- drafts

TEST_P(ApplicationsTest, EveryDraftShapeSurvivesSaveAndReload) {
  std::vector<std::pair<std::string, std::function<void(ApplicationBody&)>>> shapes = {
      {"empty", [](ApplicationBody& b) { b = ApplicationBody{}; }},
      {"only a name",
       [](ApplicationBody& b) {
         b = ApplicationBody{};
         b.contact.full_name = "Nell Null";
       }},
      {"complete", [](ApplicationBody&) {}},
      {"no email", [](ApplicationBody& b) { b.contact.email.reset(); }},
      {"no full_name", [](ApplicationBody& b) { b.contact.full_name.clear(); }},
      {"no company", [](ApplicationBody& b) { b.contact.company.clear(); }},
      {"no contact", [](ApplicationBody& b) { b.contact = {}; }},
      {"no GPU entries", [](ApplicationBody& b) { b.gpus.clear(); }},
      {"entry without quantity", [](ApplicationBody& b) { b.gpus[0].quantity.reset(); }},
      {"entry without RAM", [](ApplicationBody& b) { b.gpus[0].system_ram_gb.reset(); }},
      {"entry without upload", [](ApplicationBody& b) { b.gpus[0].upload_gbps.reset(); }},
      {"entry without download", [](ApplicationBody& b) { b.gpus[0].download_gbps.reset(); }},
      {"entry without availability", [](ApplicationBody& b) { b.gpus[1].availability.reset(); }},
      {"entry without location", [](ApplicationBody& b) { b.gpus[0].location.reset(); }},
      {"location without country", [](ApplicationBody& b) { b.gpus[0].location->country.reset(); }},
      {"location without city", [](ApplicationBody& b) { b.gpus[0].location->city.clear(); }},
      {"location without region", [](ApplicationBody& b) { b.gpus[0].location->region.clear(); }},
      {"empty location", [](ApplicationBody& b) { b.gpus[0].location = Location{}; }},
      {"entry with only a model",
       [](ApplicationBody& b) {
         GpuEntry g;
         g.model = "l4-24gb";
         b.gpus = {g};
       }},
      {"always available, no windows",
       [](ApplicationBody& b) { b.gpus[1].availability = Availability{}; }},
      {"no ups", [](ApplicationBody& b) { b.infrastructure.ups.reset(); }},
      {"ups false", [](ApplicationBody& b) { b.infrastructure.ups = false; }},
      {"no commitment", [](ApplicationBody& b) { b.infrastructure.commitment_months.reset(); }},
      {"commitment 0", [](ApplicationBody& b) { b.infrastructure.commitment_months = 0; }},
      {"no notes", [](ApplicationBody& b) { b.infrastructure.maintenance_notes.clear(); }},
      {"no infrastructure", [](ApplicationBody& b) { b.infrastructure = {}; }},
      {"fractional speeds",
       [](ApplicationBody& b) {
         b.gpus[0].upload_gbps = 0.1;
         b.gpus[0].download_gbps = 2.25;
       }},
  };
  std::set<std::string> ids;
  for (const auto& [name, shape] : shapes) {
    SCOPED_TRACE(name);
    ApplicationBody body = Complete("Ada.Ops@Example.net");
    shape(body);
    const ApplicationBody saved = Normalize(body);
    accounts::Principal u = User();
    auto created = apps_->Create(u, {body, false});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(created->body, saved);
    EXPECT_EQ(created->status, ApplicationStatus::kDraft);
    ids.insert(created->id);

    auto got = apps_->Get(u, created->id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->body, saved);
    const std::string stored = StoredBody(test_db(), created->id);
    EXPECT_EQ(stored.find("\"\""), std::string::npos) << stored;
    EXPECT_EQ(stored.find("null"), std::string::npos) << stored;

    auto updated = apps_->Update(u, created->id, body);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->body, saved);
    got = apps_->Get(u, created->id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->body, saved);
    EXPECT_EQ(Actions(*got), (std::vector<std::string>{"created"}))
        << "saving the body as it is changes nothing";

    auto again = apps_->Create(u, {body, false});
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(again.status().message().find("already have an open application"), std::string::npos);
  }
  for (const std::string status : {"", "draft"}) {
    for (int limit : {50, 200, 7}) {
      std::vector<std::string> listed = ListIds(admin_, status, limit);
      EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), ids) << status << " " << limit;
      EXPECT_EQ(listed.size(), ids.size());
    }
  }
  EXPECT_EQ(apps_->unreadable_rows(), 0u);
  EXPECT_EQ(wakes_, 0) << "drafts send no email";
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox"), 0);
}

TEST_P(ApplicationsTest, StoredBodiesAreNotRevalidated) {
  accounts::Principal u = User();
  auto a = apps_->Create(u, {ApplicationBody{}, false});
  ASSERT_TRUE(a.ok());
  // Stored by another release: a schedule without windows, an unknown time zone, a model
  // since removed from the catalog, a quantity beyond today's limit, an unknown member.
  const std::string odd =
      R"({"contact":{"email":"x@example.com","phone":"1"},"gpus":[{"model":"gtx-1080","quantity":5000,)"
      R"("availability":{"kind":"schedule","timezone":"Mars/Olympus"}}],"infrastructure":{}})";
  ASSERT_TRUE(
      test_db().Exec("UPDATE provider_applications SET body = ? WHERE id = ?", {odd, a->id}).ok());
  auto got = apps_->Get(u, a->id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->body.contact.email, "x@example.com");
  ASSERT_EQ(got->body.gpus.size(), 1u);
  EXPECT_EQ(got->body.gpus[0].model, "gtx-1080");
  EXPECT_EQ(got->body.gpus[0].quantity, 5000);
  EXPECT_EQ(got->body.gpus[0].availability, (Availability{false, "Mars/Olympus", {}}));
  EXPECT_EQ(ListIds(admin_, "draft", 50), std::vector<std::string>{a->id});
  // Submitting it still validates it, naming what to fix.
  auto submitted = apps_->Submit(u, a->id);
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().code(), StatusCode::kValidationFailed);
  EXPECT_TRUE(submitted.status().fields().count("gpus[0].model"));
  EXPECT_TRUE(submitted.status().fields().count("gpus[0].availability.windows"));
}

TEST_P(ApplicationsTest, AnUnreadableRowCannotFailAList) {
  accounts::Principal a = User(), b = User(), c = User();
  std::string ids[3];
  int i = 0;
  for (const accounts::Principal* p : {&a, &b, &c}) {
    auto app = apps_->Create(*p, {Complete("x@example.com"), false});
    ASSERT_TRUE(app.ok());
    ids[i++] = app->id;
    clock_.Advance(kOneSecond);
  }
  ASSERT_TRUE(
      test_db()
          .Exec("UPDATE provider_applications SET body = 'not JSON {' WHERE id = ?", {ids[0]})
          .ok());
  ASSERT_TRUE(test_db()
                  .Exec("UPDATE provider_applications SET body = ? WHERE id = ?",
                        {R"({"gpus": [{"model": "l4-24gb", "quantity": "eight"}]})", ids[2]})
                  .ok());

  for (const std::string status : {"", "draft"}) {
    auto page = apps_->List(admin_, {status, PageRequest{200, std::nullopt}});
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    ASSERT_EQ(page->items.size(), 1u);
    EXPECT_EQ(page->items[0].id, ids[1]);
    EXPECT_FALSE(page->next);
  }
  EXPECT_EQ(apps_->unreadable_rows(), 4u);
  // Page by page, the list moves past them.
  EXPECT_EQ(ListIds(admin_, "", 1), std::vector<std::string>{ids[1]});
  EXPECT_EQ(apps_->unreadable_rows(), 6u);
  // The owner of a broken one gets an error for that one, not a wrong answer.
  auto got = apps_->Get(a, ids[0]);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  EXPECT_NE(got.status().message().find(ids[0]), std::string::npos);
  got = apps_->Get(c, ids[2]);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("gpus[0].quantity"), std::string::npos)
      << got.status().message();
  EXPECT_TRUE(apps_->Get(b, ids[1]).ok());
}

// --- submission and review

TEST_P(ApplicationsTest, SubmitNamesWhatIsMissingThenSubmits) {
  accounts::Principal u = User();
  ApplicationBody draft = Complete("Ada.Ops@Example.net");
  draft.infrastructure = {};
  auto a = apps_->Create(u, {draft, false});
  ASSERT_TRUE(a.ok());
  auto incomplete = apps_->Submit(u, a->id);
  ASSERT_FALSE(incomplete.ok());
  EXPECT_EQ(incomplete.status().code(), StatusCode::kValidationFailed);
  EXPECT_EQ(incomplete.status().fields(),
            (FieldErrors{{"infrastructure.ups", "is required"},
                         {"infrastructure.commitment_months", "is required"}}));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM notifications"), 0);

  clock_.Advance(kOneHour);
  ASSERT_TRUE(apps_->Update(u, a->id, Complete("Ada.Ops@Example.net")).ok());
  auto other = User();
  EXPECT_EQ(apps_->Submit(other, a->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(apps_->Submit(admin_, a->id).status().code(), StatusCode::kPermissionDenied);
  clock_.Advance(kOneHour);
  auto s = apps_->Submit(u, a->id);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->status, ApplicationStatus::kSubmitted);
  EXPECT_EQ(s->submitted_at, clock_.Now());
  EXPECT_EQ(s->updated_at, clock_.Now());
  EXPECT_EQ(s->age_business_days, 0);
  EXPECT_EQ(s->body.contact.email, "ada.ops@example.net");
  EXPECT_EQ(s->suggested_tier, Tier::kCommunity);
  EXPECT_EQ(s->total_gpus, 10);
  EXPECT_TRUE(s->has_unlisted_models);
  EXPECT_EQ(Actions(*s), (std::vector<std::string>{"created", "updated", "submitted"}));
  EXPECT_EQ(s->history->back().actor_name, "Ada Lovelace");
  EXPECT_EQ(wakes_, 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'application.submitted' "
                   "AND to_addr = 'ada.ops@example.net' AND subject = 'gpunex: your provider "
                   "application was received'"),
            1);
  EXPECT_EQ(
      Number(
          "SELECT COUNT(*) FROM notifications WHERE kind = 'application.submitted' AND user_id = ?",
          {u.user.id}),
      1);

  EXPECT_EQ(apps_->Submit(u, a->id).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(apps_->Update(u, a->id, draft).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(apps_->Create(u, {draft, false}).status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(ApplicationsTest, CreateValidatesBeforeAnything) {
  accounts::Principal u = User();
  ApplicationBody bad = Complete("not-an-email");
  bad.gpus[0].quantity = 0;
  auto r = apps_->Create(u, {bad, false});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().fields(), (FieldErrors{{"contact.email", "must be a valid email address"},
                                              {"gpus[0].quantity", "must be at least 1"}}));
  ApplicationBody incomplete = Complete("a@example.com");
  incomplete.gpus[0].location->country.reset();
  r = apps_->Create(u, {incomplete, true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().fields(), (FieldErrors{{"gpus[0].location.country", "is required"}}));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM provider_applications"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM application_events"), 0);

  auto check = apps_->Check(bad, Completeness::kDraft);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->size(), 2u);
}

TEST_P(ApplicationsTest, RequestInfoThenResubmit) {
  Application a = Submitted();
  accounts::Principal u = As(a.user_id);
  clock_.Advance(kOneHour);
  auto asked = apps_->Decide(admin_, a.id, {"request_info", std::nullopt, "Which UPS model?"});
  ASSERT_TRUE(asked.ok()) << asked.status().ToString();
  EXPECT_EQ(asked->status, ApplicationStatus::kNeedsInfo);
  EXPECT_FALSE(asked->decided_at);
  EXPECT_FALSE(asked->tier);
  const ApplicationEvent& e = asked->history->back();
  EXPECT_EQ(e.action, ApplicationAction::kRequestInfo);
  EXPECT_EQ(e.actor_id, admin_.user.id);
  EXPECT_EQ(e.actor_name, "Rita Reviewer");
  EXPECT_EQ(e.from_status, ApplicationStatus::kSubmitted);
  EXPECT_EQ(e.to_status, ApplicationStatus::kNeedsInfo);
  EXPECT_EQ(e.message, "Which UPS model?");
  EXPECT_EQ(e.at, clock_.Now());
  EXPECT_TRUE(ListIds(admin_, "submitted", 50).empty());

  ApplicationBody edited = a.body;
  edited.infrastructure.maintenance_notes = "UPS: APC Symmetra PX 100 kW";
  ASSERT_TRUE(apps_->Update(u, a.id, edited).ok());
  clock_.Advance(kOneHour);
  auto again = apps_->Submit(u, a.id);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, ApplicationStatus::kSubmitted);
  EXPECT_EQ(again->submitted_at, a.submitted_at) << "the first submission is kept";
  EXPECT_EQ(again->resubmitted_at, clock_.Now());
  EXPECT_EQ(Actions(*again), (std::vector<std::string>{"created", "submitted", "request_info",
                                                       "updated", "resubmitted"}));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM provider_applications WHERE first_submitted_at = ? "
                   "AND submitted_at = ?",
                   {ToUnixMicros(*a.submitted_at), ToUnixMicros(clock_.Now())}),
            1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind IN ('application.submitted', "
                   "'application.needs_info', 'application.resubmitted')"),
            3);
  EXPECT_EQ(wakes_, 3);
  EXPECT_EQ(ListIds(admin_, "submitted", 50), std::vector<std::string>{a.id});
}

TEST_P(ApplicationsTest, ApproveCreatesProviderRoleTokenNotificationAndEmail) {
  Application a = Submitted();
  clock_.Advance(kOneHour);
  auto r = apps_->Decide(admin_, a.id, {"approve", "enterprise", "  ", true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, ApplicationStatus::kApproved);
  EXPECT_EQ(r->tier, Tier::kEnterprise);
  EXPECT_EQ(r->decided_at, clock_.Now());
  EXPECT_EQ(r->history->back().action, ApplicationAction::kApprove);
  EXPECT_EQ(r->history->back().tier, Tier::kEnterprise);
  EXPECT_FALSE(r->history->back().message) << "a blank message on approval is none";

  EXPECT_EQ(Number("SELECT COUNT(*) FROM providers WHERE user_id = ? AND tier = 'enterprise' "
                   "AND application_id = ? AND approved_by = ?",
                   {a.user_id, a.id, admin_.user.id}),
            1);
  EXPECT_TRUE(As(a.user_id).user.HasRole(accounts::kRoleProvider));
  EXPECT_EQ(
      Number(
          "SELECT COUNT(*) FROM notifications WHERE kind = 'application.approved' AND user_id = ?",
          {a.user_id}),
      1);
  EXPECT_EQ(
      Number(
          "SELECT COUNT(*) FROM audit_events WHERE action = 'application.approve' AND subject = ?",
          {a.id}),
      1);
  const std::string token_hash =
      Text("SELECT token_hash FROM agent_tokens WHERE provider_id = ?", {a.user_id});
  const std::string body =
      Text("SELECT body FROM email_outbox WHERE kind = 'application.approved'");
  EXPECT_EQ(Text("SELECT to_addr FROM email_outbox WHERE kind = 'application.approved'"),
            "ada.ops@example.net");
  const size_t at = body.find("gpx_a_");
  ASSERT_NE(at, std::string::npos) << body;
  const std::string secret = body.substr(at, body.find_first_of(" \n", at) - at);
  EXPECT_EQ(Sha256Hex(secret), token_hash);
  EXPECT_NE(body.find("curl -fsSL https://gpunex.test/agent/install.sh"), std::string::npos);
  EXPECT_EQ(wakes_, 2);  // submission, approval

  auto twice = apps_->Decide(admin_, a.id, {"reject", std::nullopt, "changed my mind"});
  EXPECT_EQ(twice.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(apps_->Create(As(a.user_id), {ApplicationBody{}, false}).status().message(),
            "you are already an approved provider");
}

TEST_P(ApplicationsTest, RejectAndTheRulesOfDecisions) {
  Application a = Submitted();
  // Stored without UPS (and read back without re-validation).
  ASSERT_TRUE(
      test_db()
          .Exec(
              "UPDATE provider_applications SET body = ? WHERE id = ?",
              {R"({"contact":{"email":"ada.ops@example.net"},"gpus":[],"infrastructure":{"ups":false}})",
               a.id})
          .ok());
  const accounts::Principal owner = As(a.user_id);
  EXPECT_EQ(apps_->Decide(owner, a.id, {"approve", "community", std::nullopt}).status().code(),
            StatusCode::kPermissionDenied);
  auto enterprise = apps_->Decide(admin_, a.id, {"approve", "enterprise", std::nullopt});
  ASSERT_FALSE(enterprise.ok());
  EXPECT_EQ(enterprise.status().fields().at("tier"),
            "Enterprise requires a UPS; approve as community instead");

  const std::vector<std::pair<DecisionRequest, FieldErrors>> bad = {
      {{"maybe", std::nullopt, std::nullopt},
       {{"decision", "must be \"approve\", \"reject\" or \"request_info\""}}},
      {{"", "community", std::nullopt}, {{"decision", "is required"}}},
      {{"approve", std::nullopt, std::nullopt}, {{"tier", "is required to approve"}}},
      {{"approve", "platinum", std::nullopt},
       {{"tier", "must be \"community\" or \"enterprise\""}}},
      {{"reject", std::nullopt, std::nullopt},
       {{"message", "must give the reason for the rejection"}}},
      {{"reject", std::nullopt, " \n "}, {{"message", "must give the reason for the rejection"}}},
      {{"request_info", std::nullopt, ""}, {{"message", "must say what information is needed"}}},
      {{"reject", "community", "no"}, {{"tier", "is only used when approving"}}},
      {{"reject", std::nullopt, std::string(4001, 'x')},
       {{"message", "must be at most 4000 characters"}}},
  };
  for (const auto& [req, fields] : bad) {
    auto r = apps_->Decide(admin_, a.id, req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().fields(), fields) << req.decision;
  }
  EXPECT_EQ(apps_->Decide(admin_, "app_nope", {"reject", std::nullopt, "no"}).status().code(),
            StatusCode::kNotFound);

  auto r =
      apps_->Decide(admin_, a.id, {"reject", std::nullopt, "Residential connection below 1 Gbps."});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, ApplicationStatus::kRejected);
  EXPECT_EQ(r->decided_at, clock_.Now());
  EXPECT_EQ(r->history->back().message, "Residential connection below 1 Gbps.");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM providers"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'application.rejected'"), 1);
  EXPECT_FALSE(As(a.user_id).user.HasRole(accounts::kRoleProvider));
  // Rejected is not open: the applicant may apply again.
  EXPECT_TRUE(apps_->Create(owner, {ApplicationBody{}, false}).ok());
}

TEST_P(ApplicationsTest, OthersApplicationsAreNotFound) {
  Application a = Submitted();
  accounts::Principal other = User();
  EXPECT_EQ(apps_->Get(other, a.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(apps_->Update(other, a.id, ApplicationBody{}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(apps_->Decide(other, a.id, {"reject", std::nullopt, "no"}).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(ListIds(other, "", 50).empty());
  EXPECT_EQ(ListIds(As(a.user_id), "", 50), std::vector<std::string>{a.id});
  EXPECT_TRUE(apps_->Get(admin_, a.id).ok());
  EXPECT_EQ(apps_->List(admin_, {"pending", {}}).status().fields().count("status"), 1u);
}

// --- time

TEST_P(ApplicationsTest, AgeInBusinessDaysAndOverdue) {
  // 2026-12-01 is a Tuesday.
  clock_.Set(ParseRfc3339("2026-12-01T10:00:00Z").value());
  Application a = Submitted();
  EXPECT_EQ(a.age_business_days, 0);
  auto age = [&] {
    auto page = apps_->List(admin_, {"submitted", {}});
    EXPECT_TRUE(page.ok());
    EXPECT_EQ(page->items.size(), 1u);
    return page->items.empty() ? Application{} : page->items[0];
  };
  clock_.Set(ParseRfc3339("2026-12-04T23:00:00Z").value());  // Friday: Wed, Thu, Fri
  EXPECT_EQ(age().age_business_days, 3);
  EXPECT_FALSE(age().overdue);
  clock_.Set(ParseRfc3339("2026-12-06T23:00:00Z").value());  // Sunday
  EXPECT_EQ(age().age_business_days, 3);
  clock_.Set(ParseRfc3339("2026-12-07T08:00:00Z").value());  // Monday
  EXPECT_EQ(age().age_business_days, 4);
  EXPECT_TRUE(age().overdue);
  ASSERT_TRUE(apps_->Decide(admin_, a.id, {"approve", "community", std::nullopt}).ok());
  clock_.Advance(14 * kOneDay);
  auto decided = apps_->Get(admin_, a.id);
  ASSERT_TRUE(decided.ok());
  EXPECT_EQ(decided->age_business_days, 4) << "the age stops at the decision";
  EXPECT_FALSE(decided->overdue);
  // A draft has no age.
  auto draft = apps_->Create(User(), {ApplicationBody{}, false});
  ASSERT_TRUE(draft.ok());
  EXPECT_FALSE(draft->age_business_days);
  EXPECT_FALSE(draft->overdue);
}

TEST_P(ApplicationsTest, TheQueueIsOldestSubmissionFirst) {
  accounts::Principal first = User(), second = User(), third = User();
  auto a = apps_->Create(first, {Complete("a@example.com"), false});
  clock_.Advance(kOneMinute);
  auto b = apps_->Create(second, {Complete("b@example.com"), false});
  clock_.Advance(kOneMinute);
  auto c = apps_->Create(third, {Complete("c@example.com"), false});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  clock_.Advance(kOneMinute);
  ASSERT_TRUE(apps_->Submit(third, c->id).ok());
  clock_.Advance(kOneMinute);
  ASSERT_TRUE(apps_->Submit(first, a->id).ok());
  clock_.Advance(kOneMinute);
  ASSERT_TRUE(apps_->Submit(second, b->id).ok());
  for (int limit : {1, 2, 50}) {
    EXPECT_EQ(ListIds(admin_, "submitted", limit), (std::vector<std::string>{c->id, a->id, b->id}));
    EXPECT_EQ(ListIds(admin_, "", limit), (std::vector<std::string>{a->id, b->id, c->id}));
  }
  auto page = apps_->List(admin_, {"submitted", PageRequest{2, std::nullopt}});
  ASSERT_TRUE(page.ok());
  EXPECT_FALSE(page->items[0].history) << "lists carry no history";
  ASSERT_TRUE(page->next);
  auto wrong = apps_->List(admin_, {"submitted", PageRequest{2, Cursor({int64_t{1}})}});
  EXPECT_EQ(wrong.status().fields().count("cursor"), 1u);
}

// --- the review flow (hardening issue, item 11)

TEST_P(ApplicationsTest, AResubmissionKeepsTheFirstSubmissionTimeAndCarriesTheReply) {
  // 2026-12-01 is a Tuesday.
  clock_.Set(ParseRfc3339("2026-12-01T10:00:00Z").value());
  Application a = Submitted();
  Application b = Submitted("b.ops@example.net");
  accounts::Principal u = As(a.user_id);
  clock_.Advance(kOneHour);
  ASSERT_TRUE(apps_->Decide(admin_, a.id, {"request_info", std::nullopt, "Which UPS model?"}).ok());

  // A reply is bounded, and only answers a request for information.
  auto too_long = apps_->Submit(u, a.id, {std::string(4001, 'x')});
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().fields(),
            (FieldErrors{{"reply", "must be at most 4000 characters"}}));
  accounts::Principal fresh = User();
  auto draft = apps_->Create(fresh, {Complete("c@example.net"), false});
  ASSERT_TRUE(draft.ok());
  auto first_with_reply = apps_->Submit(fresh, draft->id, {"hello"});
  ASSERT_FALSE(first_with_reply.ok());
  EXPECT_EQ(first_with_reply.status().fields().count("reply"), 1u);
  EXPECT_EQ(apps_->Get(fresh, draft->id)->status, ApplicationStatus::kDraft)
      << "a refused submission changes nothing";

  clock_.Set(ParseRfc3339("2026-12-04T09:00:00Z").value());  // Friday
  auto again = apps_->Submit(u, a.id, {"An APC Symmetra PX 100 kW, 40 minutes at full load."});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->submitted_at, a.submitted_at);
  EXPECT_EQ(again->resubmitted_at, clock_.Now());
  EXPECT_EQ(again->age_business_days, 3) << "counted from the first submission";
  EXPECT_EQ(Actions(*again), (std::vector<std::string>{"created", "submitted", "request_info",
                                                       "reply", "resubmitted"}));
  const ApplicationEvent& reply = again->history->at(3);
  EXPECT_EQ(reply.message, "An APC Symmetra PX 100 kW, 40 minutes at full load.");
  EXPECT_EQ(reply.actor_id, a.user_id);
  EXPECT_EQ(reply.from_status, ApplicationStatus::kNeedsInfo);
  EXPECT_EQ(reply.to_status, ApplicationStatus::kNeedsInfo);
  EXPECT_EQ(reply.at, clock_.Now());
  // The queue keeps its place: a, submitted first, is still before b.
  EXPECT_EQ(ListIds(admin_, "submitted", 1), (std::vector<std::string>{a.id, b.id}));
  // A blank reply is none.
  ASSERT_TRUE(apps_->Decide(admin_, a.id, {"request_info", std::nullopt, "And the model?"}).ok());
  auto blank = apps_->Submit(u, a.id, {" \n "});
  ASSERT_TRUE(blank.ok()) << blank.status().ToString();
  const std::vector<std::string> actions = Actions(*blank);
  EXPECT_EQ(std::count(actions.begin(), actions.end(), "reply"), 1);
}

TEST_P(ApplicationsTest, AnEditRecordsWhichFieldsChanged) {
  accounts::Principal u = User();
  auto a = apps_->Create(u, {Complete("a@example.net"), false});
  ASSERT_TRUE(a.ok());
  ApplicationBody edited = a->body;
  edited.contact.company = "Difference Engines Ltd";
  edited.gpus[0].quantity = 4;
  edited.gpus[1].availability = Availability{};
  edited.gpus.push_back(H100());
  edited.infrastructure.maintenance_notes = std::string(300, 'n');
  auto r = apps_->Update(u, a->id, edited);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ApplicationEvent& e = r->history->back();
  EXPECT_EQ(e.action, ApplicationAction::kUpdated);
  ASSERT_TRUE(e.changes);
  EXPECT_EQ(e.changes->omitted, 0u);
  EXPECT_EQ(
      e.changes->changes,
      (std::vector<FieldChange>{
          {"contact.company", "Analytical Engines DC", "Difference Engines Ltd"},
          {"gpus[0].quantity", "8", "4"},
          {"gpus[1].availability", "Europe/Rome: mon,tue,wed 08:00-20:00; sat 00:00-24:00", "24/7"},
          {"gpus[2]", std::nullopt, "8 × h100-sxm-80gb"},
          {"infrastructure.maintenance_notes", "2-hour window on the first Sunday of each month",
           std::string(200, 'n') + "…"},
      }));
  // Read back from the store as written.
  auto got = apps_->Get(u, a->id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->history->back().changes, e.changes);
  // Saving the same body again writes nothing.
  auto same = apps_->Update(u, a->id, edited);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(Actions(*same), (std::vector<std::string>{"created", "updated"}));
  EXPECT_EQ(same->updated_at, r->updated_at);
  // An entry removed, and a location cleared.
  edited.gpus.pop_back();
  edited.gpus[0].location.reset();
  r = apps_->Update(u, a->id, edited);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->history->back().changes->changes,
            (std::vector<FieldChange>{{"gpus[0].location.city", "Milan", std::nullopt},
                                      {"gpus[0].location.country", "IT", std::nullopt},
                                      {"gpus[0].location.region", "eu-south", std::nullopt},
                                      {"gpus[2]", "8 × h100-sxm-80gb", std::nullopt}}));
}

TEST(DiffBodies, IsBoundedAndCutsAtACharacterBoundary) {
  ApplicationBody before, after;
  for (int i = 0; i < 60; ++i) {
    GpuEntry g;
    g.model = "l4-24gb";
    g.quantity = 1;
    before.gpus.push_back(g);
    g.quantity = 2;
    after.gpus.push_back(g);
  }
  BodyDiff d = DiffBodies(before, after);
  EXPECT_EQ(d.changes.size(), kMaxChanges);
  EXPECT_EQ(d.omitted, 20u);
  EXPECT_TRUE(DiffBodies(before, before).empty());

  ApplicationBody a, b;
  a.contact.full_name = "x";
  b.contact.full_name = "x";
  for (int i = 0; i < 150; ++i) b.contact.full_name += "é";  // 2 bytes each
  d = DiffBodies(a, b);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(
      *d.changes[0].to, "x" + [] {
        std::string s;
        for (int i = 0; i < 99; ++i) s += "é";
        return s;
      }() + "…");
}

TEST_P(ApplicationsTest, EnterpriseAgainstTheSuggestionNeedsAnOverride) {
  Application a = Submitted();  // suggested: community (not 24/7 everywhere), with a UPS
  ASSERT_EQ(a.suggested_tier, Tier::kCommunity);
  auto plain = apps_->Decide(admin_, a.id, {"approve", "enterprise", std::nullopt});
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), StatusCode::kValidationFailed);
  EXPECT_EQ(plain.status().fields().at("tier"),
            "differs from the suggested tier, community (not available 24/7 on every GPU "
            "entry); to approve as enterprise anyway, set override_suggestion");
  EXPECT_EQ(apps_->Get(admin_, a.id)->status, ApplicationStatus::kSubmitted);
  // Only with approve.
  DecisionRequest info{"request_info", std::nullopt, "Why?", true};
  EXPECT_EQ(apps_->Decide(admin_, a.id, info).status().fields(),
            (FieldErrors{{"override_suggestion", "is only used when approving"}}));

  auto r = apps_->Decide(admin_, a.id, {"approve", "enterprise", std::nullopt, true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tier, Tier::kEnterprise);
  EXPECT_EQ(r->decided_by, admin_.user.id);
  EXPECT_EQ(r->history->back().overridden_suggestion, Tier::kCommunity);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE action = 'application.approve' AND "
                   "subject = ? AND detail LIKE '%overridden_suggestion%'",
                   {a.id}),
            1);

  // Community against an Enterprise suggestion needs no confirmation, and is recorded.
  accounts::Principal u = User();
  ApplicationBody worthy = Complete("e@example.net");
  worthy.gpus[1].availability = Availability{};
  auto e = apps_->Create(u, {worthy, true});
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->suggested_tier, Tier::kEnterprise);
  auto c = apps_->Decide(admin_, e->id, {"approve", "community", std::nullopt});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->history->back().overridden_suggestion, Tier::kEnterprise);
  // As suggested: no override recorded.
  Application d = Submitted("d@example.net");
  auto as_suggested = apps_->Decide(admin_, d.id, {"approve", "community", std::nullopt});
  ASSERT_TRUE(as_suggested.ok());
  EXPECT_FALSE(as_suggested->history->back().overridden_suggestion);
}

TEST_P(ApplicationsTest, TheQueueSearchesSortsAndCounts) {
  accounts::Principal first = User(), second = User(), third = User();
  ApplicationBody b1 = Complete("ops@alpha-gpu.example");
  b1.contact.company = "Alpha GPU 100% Srl";
  ApplicationBody b2 = Complete("noc@beta.example");
  b2.contact = {"Grace Hopper", "noc@beta.example", "Beta Compute"};
  ApplicationBody b3 = Complete("it@gamma.example");
  b3.contact.company = "Gamma_Labs";
  auto a1 = apps_->Create(first, {b1, true});
  clock_.Advance(kOneMinute);
  auto a2 = apps_->Create(second, {b2, true});
  clock_.Advance(kOneMinute);
  auto a3 = apps_->Create(third, {b3, true});
  ASSERT_TRUE(a1.ok() && a2.ok() && a3.ok());
  auto list = [&](const std::string& q, const std::string& sort, int limit = 50) {
    ListApplicationsRequest req{"submitted", PageRequest{limit, std::nullopt}};
    req.query = q;
    req.sort = sort;
    std::vector<std::string> ids;
    int64_t total = -1;
    for (int pages = 0; pages < 10; ++pages) {
      auto page = apps_->List(admin_, req);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      if (total >= 0) {
        EXPECT_EQ(page->total, total) << "the same total on every page";
      }
      total = page->total;
      for (const Application& a : page->items) ids.push_back(a.id);
      if (!page->next) break;
      req.page.after = page->next;
    }
    EXPECT_EQ(total, static_cast<int64_t>(ids.size())) << q;
    return ids;
  };
  for (int limit : {1, 2, 50}) {
    EXPECT_EQ(list("", "", limit), (std::vector<std::string>{a1->id, a2->id, a3->id}));
    EXPECT_EQ(list("", "oldest", limit), (std::vector<std::string>{a1->id, a2->id, a3->id}));
    EXPECT_EQ(list("", "newest", limit), (std::vector<std::string>{a3->id, a2->id, a1->id}));
  }
  EXPECT_EQ(list("beta compute", ""), std::vector<std::string>{a2->id}) << "company, any case";
  EXPECT_EQ(list("  HOPPER ", ""), std::vector<std::string>{a2->id}) << "name, trimmed";
  EXPECT_EQ(list("it@gamma", ""), std::vector<std::string>{a3->id}) << "email";
  EXPECT_EQ(list(a1->id, ""), std::vector<std::string>{a1->id}) << "id";
  EXPECT_EQ(list("100%", ""), std::vector<std::string>{a1->id}) << "% is a character";
  EXPECT_EQ(list("a_l", ""), std::vector<std::string>{a3->id}) << "_ is a character";
  EXPECT_EQ(list("Lovelace", "newest"), (std::vector<std::string>{a3->id, a1->id}));
  EXPECT_TRUE(list("nobody", "").empty());
  // An edit updates what is searched.
  ASSERT_TRUE(apps_->Decide(admin_, a2->id, {"request_info", std::nullopt, "More?"}).ok());
  b2.contact.company = "Delta Compute";
  ASSERT_TRUE(apps_->Update(second, a2->id, b2).ok());
  ASSERT_TRUE(apps_->Submit(second, a2->id).ok());
  EXPECT_TRUE(list("beta compute", "").empty());
  EXPECT_EQ(list("delta", ""), std::vector<std::string>{a2->id});

  // Bad values, each named.
  ListApplicationsRequest bad{"submitted", PageRequest{}};
  bad.query = std::string(101, 'q');
  bad.sort = "age";
  EXPECT_EQ(apps_->List(admin_, bad).status().fields(),
            (FieldErrors{{"q", "must be at most 100 characters"},
                         {"sort", "must be \"oldest\" or \"newest\""}}));

  // mine: an admin's own applications only; for others it is what they get anyway.
  ListApplicationsRequest mine{"", PageRequest{}};
  mine.mine = true;
  auto own = apps_->List(admin_, mine);
  ASSERT_TRUE(own.ok());
  EXPECT_TRUE(own->items.empty());
  EXPECT_EQ(own->total, 0);
  auto theirs = apps_->List(second, mine);
  ASSERT_TRUE(theirs.ok());
  ASSERT_EQ(theirs->items.size(), 1u);
  EXPECT_EQ(theirs->items[0].id, a2->id);
  auto everything = apps_->List(admin_, {"", PageRequest{}});
  ASSERT_TRUE(everything.ok());
  EXPECT_EQ(everything->total, 3);
}

// --- faults

TEST_P(ApplicationsTest, ADecisionThatCommittedInDoubtIsNotRepeated) {
  Application a = Submitted();
  const int wakes = wakes_;
  faulty().FailCommit("INSERT INTO agent_tokens", /*committed=*/true);
  auto r = apps_->Decide(admin_, a.id, {"approve", "enterprise", std::nullopt, true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutcomeUnknown);
  EXPECT_EQ(wakes_, wakes) << "no after-commit effect for a commit in doubt";

  auto retry = apps_->Decide(admin_, a.id, {"approve", "enterprise", std::nullopt, true});
  ASSERT_FALSE(retry.ok());
  EXPECT_EQ(retry.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(retry.status().message().find("approved"), std::string::npos);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM providers"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'application.approved'"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM application_events WHERE action = 'approve'"), 1);
  auto got = apps_->Get(admin_, a.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, ApplicationStatus::kApproved);
}

TEST_P(ApplicationsTest, ADecisionThatDidNotCommitSucceedsOnRetry) {
  Application a = Submitted();
  const int wakes = wakes_;
  faulty().FailCommit("INSERT INTO agent_tokens", /*committed=*/false);
  auto r = apps_->Decide(admin_, a.id, {"approve", "community", std::nullopt});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutcomeUnknown);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM providers"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'application.approved'"), 0);
  EXPECT_EQ(apps_->Get(admin_, a.id)->status, ApplicationStatus::kSubmitted);

  auto retry = apps_->Decide(admin_, a.id, {"approve", "community", std::nullopt});
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_EQ(retry->status, ApplicationStatus::kApproved);
  EXPECT_EQ(wakes_, wakes + 1);
  EXPECT_EQ(apps_->Decide(admin_, a.id, {"approve", "community", std::nullopt}).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM providers"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'application.approved'"), 1);
}

TEST_P(ApplicationsTest, AConflictOnTheHistoryInsertIsRetried) {
  Application a = Submitted();
  const int before = faulty().Count("INSERT INTO application_events");
  faulty().FailStatement("INSERT INTO application_events",
                         Aborted("injected serialization failure"));
  auto r = apps_->Decide(admin_, a.id, {"approve", "community", std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(faulty().injected(), 1);
  EXPECT_EQ(faulty().Count("INSERT INTO application_events") - before, 2)
      << "the transaction ran again";
  EXPECT_EQ(Actions(*r), (std::vector<std::string>{"created", "submitted", "approve"}));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM application_events WHERE action = 'approve'"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'application.approved'"), 1);
}

TEST_P(ApplicationsTest, AnOutageChangesNothing) {
  accounts::Principal u = User();
  faulty().FailStatement("INSERT INTO application_events", Unavailable("injected outage"));
  auto r = apps_->Create(u, {Complete("a@example.com"), true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM provider_applications"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox"), 0);
  EXPECT_EQ(wakes_, 0);
  EXPECT_TRUE(apps_->Create(u, {Complete("a@example.com"), true}).ok());
  EXPECT_EQ(wakes_, 1);
}

TEST_P(ApplicationsTest, WithoutAWakeFunctionNothingIsRegistered) {
  ApplicationsOptions o;
  o.clock = &clock_;
  Applications quiet(faulty(), o);
  auto r = quiet.Create(User(), {Complete("a@example.com"), true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox"), 1);
}

GPUNEX_INSTANTIATE_BACKENDS(ApplicationsTest);

// --- version 6: rows release 0.1 stored

class ApplicationsMigrationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ApplicationsMigrationTest, Version6RepairsTheRowsRelease01Stored) {
  auto opened = TestDatabase::Open(GetParam());
  if (opened.status().code() == StatusCode::kFailedPrecondition)
    GTEST_SKIP() << opened.status().message();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<TestDatabase> db = std::move(*opened);
  ASSERT_TRUE(db->Migrate(SchemaBefore(6)).ok());
  gpunex::testing::FakeClock clock;
  accounts::AccountsOptions ao;
  ao.argon2_opslimit = 1;
  ao.argon2_memlimit_bytes = 8192;
  accounts::Accounts accounts(db->db(), ao);

  // The bodies exactly as release 0.1 stored them (tests/e2e/upgrade/release-0.1.sql).
  struct Old {
    std::string id, status, body;
  };
  const std::vector<Old> rows = {
      {"app_empty", "draft",
       R"({"contact":{"full_name":"","email":"","company":""},"gpus":[],"infrastructure":{"ups":null,)"
       R"("commitment_months":null,"maintenance_notes":""}})"},
      {"app_null_email", "draft",
       R"({"contact":{"full_name":"Nell Null","email":"","company":"Null & Void Ltd"},"gpus":[{"model":)"
       R"("rtx4090-24gb","model_other":null,"quantity":2,"system_ram_gb":64,"upload_gbps":1E0,"download_gbps":)"
       R"(1E0,"availability":{"kind":"always"},"location":{"city":"Vienna","country":"AT","region":"eu-central"}}],)"
       R"("infrastructure":{"ups":null,"commitment_months":null,"maintenance_notes":""}})"},
      {"app_no_country", "draft",
       R"({"contact":{"full_name":"Milo Milan","email":"milo.ops@example.net","company":"Navigli GPU"},"gpus":)"
       R"([{"model":"a100-pcie-80gb","model_other":null,"quantity":4,"system_ram_gb":512,"upload_gbps":2E0,)"
       R"("download_gbps":2E0,"availability":{"kind":"always"},"location":{"city":"Milan","country":"",)"
       R"("region":null}}],"infrastructure":{"ups":true,"commitment_months":6,"maintenance_notes":""}})"},
      {"app_approved", "approved",
       R"({"contact":{"full_name":"Pia Provider","email":"pia.ops@example.net","company":""},"gpus":[{"model":)"
       R"("rtx4090-24gb","model_other":null,"quantity":2,"system_ram_gb":64,"upload_gbps":5E-1,"download_gbps":)"
       R"(9E-1,"availability":{"kind":"schedule","timezone":"Europe/Rome","windows":[{"days":["mon","tue","wed"],)"
       R"("start":"08:00","end":"20:00"},{"days":["sat"],"start":"00:00","end":"24:00"}]},"location":{"city":)"
       R"("Milan","country":"IT","region":"eu-south"}}],"infrastructure":{"ups":false,"commitment_months":0,)"
       R"("maintenance_notes":""}})"},
  };
  int64_t t = ToUnixMicros(clock.Now());
  for (const Old& r : rows) {
    auto u = accounts.SignUp({r.id + "@example.com", "long-enough-password", r.id}, "");
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    ASSERT_TRUE(
        db->Exec("INSERT INTO provider_applications (id, user_id, status, body, suggested_tier, "
                 "tier, created_at, updated_at) VALUES (?, ?, ?, ?, 'community', NULL, ?, ?)",
                 {r.id, u->id, r.status, r.body, t, t})
            .ok());
    ASSERT_TRUE(
        db->Exec("INSERT INTO application_events (id, application_id, at, actor_user_id, action, "
                 "from_status, to_status) VALUES (?, ?, ?, ?, 'created', '', 'draft')",
                 {NewId("ape"), r.id, t, u->id})
            .ok());
    ++t;
  }
  ASSERT_TRUE(db->Migrate(Schema()).ok());
  EXPECT_EQ(store::CurrentSchemaVersion(db->db()).value(), schema::LatestVersion());

  std::map<std::string, std::string> repaired;
  for (const Old& r : rows) {
    repaired[r.id] = StoredBody(*db, r.id);
    EXPECT_EQ(repaired[r.id].find("\"\""), std::string::npos) << repaired[r.id];
    EXPECT_EQ(repaired[r.id].find(":null"), std::string::npos) << repaired[r.id];
  }
  EXPECT_EQ(repaired["app_empty"], R"({"contact":{},"gpus":[],"infrastructure":{}})");

  // Read back as saved.
  auto admin_user = accounts.CreateAdmin("admin@example.com", "admin-password", "Admin");
  ASSERT_TRUE(admin_user.ok());
  accounts::Principal admin;
  admin.user = *admin_user;
  ApplicationsOptions o;
  o.clock = &clock;
  Applications apps(db->db(), o);
  std::map<std::string, ApplicationBody> bodies;
  for (const Old& r : rows) {
    auto got = apps.Get(admin, r.id);
    ASSERT_TRUE(got.ok()) << r.id << ": " << got.status().ToString();
    bodies[r.id] = got->body;
  }
  EXPECT_EQ(bodies["app_empty"], ApplicationBody{});
  EXPECT_EQ(bodies["app_null_email"].contact,
            (Contact{"Nell Null", std::nullopt, "Null & Void Ltd"}));
  ASSERT_EQ(bodies["app_null_email"].gpus.size(), 1u);
  EXPECT_EQ(bodies["app_null_email"].gpus[0].location, (Location{"Vienna", "AT", "eu-central"}));
  EXPECT_FALSE(bodies["app_null_email"].infrastructure.ups);
  ASSERT_EQ(bodies["app_no_country"].gpus.size(), 1u);
  EXPECT_EQ(bodies["app_no_country"].gpus[0].location, (Location{"Milan", std::nullopt, ""}));
  EXPECT_EQ(bodies["app_no_country"].contact.email, "milo.ops@example.net");
  const ApplicationBody& approved = bodies["app_approved"];
  ASSERT_EQ(approved.gpus.size(), 1u);
  EXPECT_EQ(approved.gpus[0].upload_gbps, 0.5);
  EXPECT_EQ(approved.gpus[0].download_gbps, 0.9);
  EXPECT_FALSE(approved.gpus[0].model_other);
  EXPECT_EQ(
      approved.gpus[0].availability,
      (Availability{false,
                    "Europe/Rome",
                    {{{"mon", "tue", "wed"}, "08:00", "20:00"}, {{"sat"}, "00:00", "24:00"}}}));
  EXPECT_EQ(approved.infrastructure, (Infrastructure{false, 0, ""}));
  EXPECT_EQ(approved.contact, (Contact{"Pia Provider", "pia.ops@example.net", ""}));

  for (const std::string status : {"", "draft"}) {
    auto page = apps.List(admin, {status, PageRequest{200, std::nullopt}});
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_EQ(page->items.size(), status.empty() ? 4u : 3u);
  }
  EXPECT_EQ(apps.unreadable_rows(), 0u);

  // Idempotent: running the step again changes nothing.
  const std::vector<store::Migration> mine = ApplicationsMigrations();
  auto v6 = std::find_if(mine.begin(), mine.end(),
                         [](const store::Migration& m) { return m.version == 6; });
  ASSERT_NE(v6, mine.end());
  ASSERT_TRUE(db->db().Transact([&](store::Tx& tx) { return v6->step(tx); }).ok());
  for (const Old& r : rows) {
    EXPECT_EQ(StoredBody(*db, r.id), repaired[r.id]);
  }
}

TEST_P(ApplicationsMigrationTest, Version6LeavesWhatItCannotReadAlone) {
  auto opened = TestDatabase::Open(GetParam());
  if (opened.status().code() == StatusCode::kFailedPrecondition)
    GTEST_SKIP() << opened.status().message();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<TestDatabase> db = std::move(*opened);
  ASSERT_TRUE(db->Migrate(SchemaBefore(6)).ok());
  accounts::AccountsOptions ao;
  ao.argon2_opslimit = 1;
  ao.argon2_memlimit_bytes = 8192;
  accounts::Accounts accounts(db->db(), ao);
  auto u = accounts.SignUp({"x@example.com", "long-enough-password", "X"}, "");
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE(db->Exec("INSERT INTO provider_applications (id, user_id, status, body, "
                       "suggested_tier, created_at, updated_at) VALUES ('app_bad', ?, 'draft', "
                       "'not JSON', 'community', 1, 1)",
                       {u->id})
                  .ok());
  ASSERT_TRUE(db->Migrate(Schema()).ok());
  EXPECT_EQ(StoredBody(*db, "app_bad"), "not JSON");
}

TEST_P(ApplicationsMigrationTest, Version16MakesOldRowsSearchableAndKeepsTheirSubmission) {
  auto opened = TestDatabase::Open(GetParam());
  if (opened.status().code() == StatusCode::kFailedPrecondition)
    GTEST_SKIP() << opened.status().message();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<TestDatabase> db = std::move(*opened);
  ASSERT_TRUE(db->Migrate(SchemaBefore(16)).ok());
  accounts::AccountsOptions ao;
  ao.argon2_opslimit = 1;
  ao.argon2_memlimit_bytes = 8192;
  accounts::Accounts accounts(db->db(), ao);
  auto u = accounts.SignUp({"old@example.com", "long-enough-password", "Old"}, "");
  ASSERT_TRUE(u.ok());
  // Submitted before first_submitted_at was always written; one row that does not read.
  ASSERT_TRUE(db->Exec("INSERT INTO provider_applications (id, user_id, status, body, "
                       "suggested_tier, created_at, updated_at, submitted_at) VALUES "
                       "('app_OLD', ?, 'submitted', ?, 'community', 1, 1, 5000000)",
                       {u->id, R"({"contact":{"full_name":"Olga Older","company":"Older Racks"}})"})
                  .ok());
  ASSERT_TRUE(db->Exec("INSERT INTO provider_applications (id, user_id, status, body, "
                       "suggested_tier, created_at, updated_at) VALUES ('app_BAD', ?, 'draft', "
                       "'not JSON', 'community', 2, 2)",
                       {u->id})
                  .ok());
  ASSERT_TRUE(db->Migrate(Schema()).ok());

  auto admin_user = accounts.CreateAdmin("admin@example.com", "admin-password", "Admin");
  ASSERT_TRUE(admin_user.ok());
  accounts::Principal admin;
  admin.user = *admin_user;
  gpunex::testing::FakeClock clock;
  ApplicationsOptions o;
  o.clock = &clock;
  Applications apps(db->db(), o);
  ListApplicationsRequest req{"submitted", PageRequest{}};
  req.query = "older racks";
  auto page = apps.List(admin, req);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->items.size(), 1u) << "searchable, and in the queue by its first submission";
  EXPECT_EQ(page->items[0].submitted_at, FromUnixMicros(5000000));
  EXPECT_FALSE(page->items[0].resubmitted_at);
  req = {"", PageRequest{}};
  req.query = "app_bad";
  page = apps.List(admin, req);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 1) << "an unreadable row is found by its id";
  EXPECT_TRUE(page->items.empty());
}

GPUNEX_INSTANTIATE_BACKENDS(ApplicationsMigrationTest);

}  // namespace
}  // namespace gpunex::platform::applications
