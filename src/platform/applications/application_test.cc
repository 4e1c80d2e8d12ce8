#include "platform/applications/application.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "common/testing/enum_names.h"

namespace gpunex::platform::applications {
namespace {

bool Known(std::string_view id) { return id == "h100-sxm-80gb" || id == "l4-24gb"; }

GpuEntry Entry(std::string model, int64_t quantity, double gbps) {
  GpuEntry g;
  g.model = std::move(model);
  g.quantity = quantity;
  g.system_ram_gb = 1024;
  g.upload_gbps = gbps;
  g.download_gbps = gbps;
  g.availability = Availability{};
  g.location = Location{"Milan", "IT", "eu-south"};
  return g;
}

ApplicationBody Valid() {
  ApplicationBody b;
  b.contact = {"Ada Rossi", "Ada@Example.com", "Rossi DC"};
  b.gpus.push_back(Entry("h100-sxm-80gb", 8, 10));
  GpuEntry other = Entry("other", 2, 0.5);
  other.model_other = "RTX 5090";
  other.system_ram_gb = 128;
  other.download_gbps = 1;
  other.availability = Availability{false, "Europe/Rome", {{{"sat", "mon"}, "08:00", "24:00"}}};
  other.location = Location{"Turin", "IT", ""};
  b.gpus.push_back(other);
  b.infrastructure = {true, 12, "Sundays\nearly"};
  return b;
}

TEST(Application, AcceptsAValidBodyAndNormalises) {
  ApplicationBody b = Valid();
  EXPECT_EQ(Validate(b, Completeness::kComplete, Known), FieldErrors{});
  ApplicationBody n = Normalize(b);
  EXPECT_EQ(n.contact.email, "ada@example.com");
  EXPECT_EQ(n.gpus[1].availability->windows[0].days, (std::vector<std::string>{"mon", "sat"}));
  EXPECT_EQ(Normalize(n), n);  // stable
}

TEST(Application, AcceptsAWindowThatCrossesMidnight) {
  ApplicationBody b = Valid();
  b.gpus[1].availability->windows[0] = {{"fri"}, "22:00", "06:00"};
  EXPECT_EQ(Validate(b, Completeness::kComplete, Known), FieldErrors{});
  b.gpus[1].availability->windows[0] = {{"fri"}, "00:00", "24:00"};
  EXPECT_EQ(Validate(b, Completeness::kComplete, Known), FieldErrors{});
}

TEST(Application, ReportsEveryBadFieldByPath) {
  ApplicationBody b = Valid();
  b.gpus[0].quantity = 0;
  b.gpus[0].model = "h200-nope";
  b.gpus[0].upload_gbps = -1;
  b.gpus[0].location->country = "XX";
  b.gpus[1].availability->timezone = "Mars/Olympus";
  b.gpus[1].availability->windows[0].end = "08:00";
  b.contact.email = "not-an-email";
  b.infrastructure.commitment_months = 5;
  const FieldErrors f = Validate(b, Completeness::kComplete, Known);
  EXPECT_EQ(f.at("gpus[0].quantity"), "must be at least 1");
  EXPECT_EQ(f.at("gpus[0].model"),
            "is not a GPU model in the catalog; use \"other\" with model_other");
  EXPECT_EQ(f.at("gpus[0].upload_gbps"), "must be greater than 0");
  EXPECT_EQ(f.at("gpus[0].location.country"),
            "must be an ISO 3166-1 alpha-2 country code such as \"IT\"");
  EXPECT_EQ(f.at("gpus[1].availability.timezone"),
            "must be an IANA time zone such as \"Europe/Rome\"");
  EXPECT_EQ(f.at("gpus[1].availability.windows[0].end"),
            "must differ from start (for the whole day use 00:00 to 24:00)");
  EXPECT_EQ(f.at("contact.email"), "must be a valid email address");
  EXPECT_EQ(f.at("infrastructure.commitment_months"), "must be 0 (none), 3, 6 or 12");
  EXPECT_EQ(f.size(), 8u);
}

TEST(Application, RangesAndListsUseTheApiMessages) {
  ApplicationBody b = Valid();
  b.gpus[0].quantity = 2000;
  b.gpus[0].system_ram_gb = 0;
  b.gpus[0].download_gbps = 801;
  b.gpus[1].availability->windows[0].days = {"mon", "mon"};
  b.gpus[1].availability->windows[0].start = "25:00";
  const FieldErrors f = Validate(b, Completeness::kDraft, Known);
  EXPECT_EQ(f.at("gpus[0].quantity"), "must be at most 1024");
  EXPECT_EQ(f.at("gpus[0].system_ram_gb"), "must be at least 1");
  EXPECT_EQ(f.at("gpus[0].download_gbps"), "must be at most 800");
  EXPECT_EQ(f.at("gpus[1].availability.windows[0].days"), "must not repeat a day");
  EXPECT_EQ(f.at("gpus[1].availability.windows[0].start"),
            "must be a time \"HH:MM\" from 00:00 to 23:59");
  EXPECT_EQ(f.size(), 5u);

  b = Valid();
  b.gpus[1].availability->windows.clear();
  b.gpus.resize(kMaxGpuEntries + 1, Entry("l4-24gb", 1, 1));
  const FieldErrors g = Validate(b, Completeness::kDraft, Known);
  EXPECT_EQ(g.at("gpus"), "must have at most 64 items");
  EXPECT_EQ(g.at("gpus[1].availability.windows"), "must have at least 1 item");
  EXPECT_EQ(Validate(ApplicationBody{}, Completeness::kComplete, Known).at("gpus"),
            "must have at least 1 item");
}

TEST(Application, ModelOtherOnlyWithOther) {
  ApplicationBody b = Valid();
  b.gpus[1].model_other.reset();
  b.gpus[0].model_other = "My H100";
  const FieldErrors f = Validate(b, Completeness::kDraft, Known);
  EXPECT_EQ(f.at("gpus[1].model_other"), "is required");
  EXPECT_EQ(f.at("gpus[0].model_other"), "must be null unless model is \"other\"");
  EXPECT_EQ(f.size(), 2u);
}

TEST(Application, DraftsMayBeIncompleteButNotWrong) {
  ApplicationBody draft;
  draft.contact.full_name = "Ada";
  EXPECT_EQ(Validate(draft, Completeness::kDraft, Known), FieldErrors{});
  const FieldErrors missing = Validate(draft, Completeness::kComplete, Known);
  EXPECT_EQ(missing.at("contact.email"), "is required");
  EXPECT_EQ(missing.at("infrastructure.ups"), "is required");
  EXPECT_EQ(missing.at("infrastructure.commitment_months"), "is required");

  // A GPU entry with nothing but its model, and a location without country.
  GpuEntry bare;
  bare.model = "l4-24gb";
  bare.location = Location{"Milan", std::nullopt, ""};
  draft.gpus = {bare};
  EXPECT_EQ(Validate(draft, Completeness::kDraft, Known), FieldErrors{});
  const FieldErrors entry = Validate(draft, Completeness::kComplete, Known);
  for (const char* f : {"quantity", "system_ram_gb", "upload_gbps", "download_gbps", "availability",
                        "location.country"}) {
    EXPECT_EQ(entry.at(std::string("gpus[0].") + f), "is required") << f;
  }
  EXPECT_FALSE(entry.count("gpus[0].location.city"));

  // Present values are checked in drafts too: an email or country of "" is not absent.
  draft.contact.email = "";
  draft.gpus[0].location->country = "";
  draft.gpus[0].quantity = 2000;
  const FieldErrors wrong = Validate(draft, Completeness::kDraft, Known);
  EXPECT_EQ(wrong.at("contact.email"), "must be a valid email address");
  EXPECT_TRUE(wrong.count("gpus[0].location.country"));
  EXPECT_EQ(wrong.at("gpus[0].quantity"), "must be at most 1024");
}

TEST(Application, BlankRequiredTextIsMissing) {
  ApplicationBody b = Valid();
  b.contact.full_name = "   ";
  b.contact.email = " ";
  b.gpus[0].location->city = "";
  const FieldErrors f = Validate(b, Completeness::kComplete, Known);
  EXPECT_EQ(f.at("contact.full_name"), "is required");
  EXPECT_EQ(f.at("contact.email"), "is required");
  EXPECT_EQ(f.at("gpus[0].location.city"), "is required");
  EXPECT_EQ(f.size(), 3u);
}

TEST(Application, SuggestsTierFromInfrastructure) {
  ApplicationBody app = Valid();
  // The second entry has a schedule and 0.5 Gbps up: community, with reasons.
  TierSuggestion s = SuggestTier(app);
  EXPECT_EQ(s.tier, Tier::kCommunity);
  EXPECT_EQ(s.reasons.size(), 2u);
  app.gpus.pop_back();
  EXPECT_EQ(SuggestTier(app).tier, Tier::kEnterprise);
  EXPECT_TRUE(SuggestTier(app).reasons.empty());
  app.infrastructure.ups = false;
  EXPECT_EQ(SuggestTier(app).tier, Tier::kCommunity);
  EXPECT_EQ(SuggestTier(ApplicationBody{}).reasons.size(), 4u);
}

TEST(Application, Totals) {
  ApplicationBody app = Valid();
  EXPECT_EQ(TotalGpus(app), 10);
  EXPECT_TRUE(HasUnlistedModels(app));
  app.gpus.pop_back();
  EXPECT_FALSE(HasUnlistedModels(app));
}

TEST(Application, TimeZonesAndCountries) {
  EXPECT_TRUE(IsValidTimeZone("Europe/Rome"));
  EXPECT_TRUE(IsValidTimeZone("America/New_York"));
  EXPECT_FALSE(IsValidTimeZone("Europe/Atlantis"));
  EXPECT_FALSE(IsValidTimeZone(""));
  EXPECT_TRUE(IsCountryCode("IT"));
  EXPECT_TRUE(IsCountryCode("ZW"));
  EXPECT_FALSE(IsCountryCode("it"));
  EXPECT_FALSE(IsCountryCode("XX"));
}

// The kinds of availability have one name each, which the wire and the stored documents
// use and which reads back as itself; a refusal lists them.
TEST(AvailabilityKindTest, EachKindHasOneNameThatReadsBack) {
  EXPECT_EQ(Name(AvailabilityKind::kAlways), "always");
  EXPECT_EQ(Name(AvailabilityKind::kSchedule), "schedule");
  EXPECT_EQ(kAvailabilityKindNames.Parse("schedule"), AvailabilityKind::kSchedule);
  EXPECT_EQ(kAvailabilityKindNames.Parse("weekly"), std::nullopt);
  EXPECT_EQ(kAvailabilityKindNames.Listed(), "\"always\" or \"schedule\"");
}

// The statuses are spelt as the wire and the database have always spelt them, each reads
// back as itself, and a stored value outside the table is corruption.
TEST(ApplicationStatusTest, EachStatusHasOneNameThatReadsBack) {
  using enum ApplicationStatus;
  EXPECT_EQ(Name(kDraft), "draft");
  EXPECT_EQ(Name(kSubmitted), "submitted");
  EXPECT_EQ(Name(kNeedsInfo), "needs_info");
  EXPECT_EQ(Name(kApproved), "approved");
  EXPECT_EQ(Name(kRejected), "rejected");
  gpunex::testing::ExpectEachNameReadsBack(kApplicationStatusNames, kRejected);
  EXPECT_THROW(kApplicationStatusNames.ParseStored("Approved"), std::invalid_argument);
}

// draft → submitted → (needs_info → submitted)* → approved | rejected.
TEST(ApplicationStatusTest, MovesOnlyAlongTheLifeCycle) {
  using enum ApplicationStatus;
  EXPECT_TRUE(ApplicationMayGo(kDraft, kSubmitted));
  EXPECT_TRUE(ApplicationMayGo(kNeedsInfo, kSubmitted));
  EXPECT_TRUE(ApplicationMayGo(kSubmitted, kNeedsInfo));
  EXPECT_TRUE(ApplicationMayGo(kSubmitted, kApproved));
  EXPECT_TRUE(ApplicationMayGo(kSubmitted, kRejected));
  EXPECT_FALSE(ApplicationMayGo(kDraft, kApproved));
  EXPECT_FALSE(ApplicationMayGo(kNeedsInfo, kApproved));
  EXPECT_FALSE(ApplicationMayGo(kSubmitted, kSubmitted));
  EXPECT_FALSE(ApplicationMayGo(kSubmitted, kDraft));
  for (ApplicationStatus to : {kDraft, kSubmitted, kNeedsInfo, kApproved, kRejected}) {
    EXPECT_FALSE(ApplicationMayGo(kApproved, to)) << Name(to);
    EXPECT_FALSE(ApplicationMayGo(kRejected, to)) << Name(to);
  }
}

}  // namespace
}  // namespace gpunex::platform::applications
