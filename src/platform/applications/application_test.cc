#include "platform/applications/application.h"

#include <gtest/gtest.h>

namespace gpunex::platform::applications {
namespace {

bool Known(std::string_view id) { return id == "h100-sxm-80gb" || id == "l4-24gb"; }

json::value Valid() {
  return ParseJson(R"({
    "contact": {"full_name": "Ada Rossi", "email": "Ada@Example.com", "company": "Rossi DC"},
    "gpus": [{"model": "h100-sxm-80gb", "model_other": null, "quantity": 8, "system_ram_gb": 1024,
              "upload_gbps": 10, "download_gbps": 10, "availability": {"kind": "always"},
              "location": {"city": "Milan", "country": "IT", "region": "eu-south"}},
             {"model": "other", "model_other": "RTX 5090", "quantity": 2, "system_ram_gb": 128,
              "upload_gbps": 0.5, "download_gbps": 1,
              "availability": {"kind": "schedule", "timezone": "Europe/Rome",
                               "windows": [{"days": ["sat", "mon"], "start": "08:00", "end": "24:00"}]},
              "location": {"city": "Turin", "country": "IT"}}],
    "infrastructure": {"ups": true, "commitment_months": 12, "maintenance_notes": "Sundays\nearly"}})")
      .value();
}

TEST(Application, ParsesAValidBodyAndNormalises) {
  auto app = ParseApplication(Valid(), Completeness::kComplete, Known);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->contact.email, "ada@example.com");
  ASSERT_EQ(app->gpus.size(), 2u);
  EXPECT_EQ(app->gpus[1].model_other, "RTX 5090");
  EXPECT_EQ(app->gpus[1].availability->windows[0].days, (std::vector<std::string>{"mon", "sat"}));
  // Round trip through JSON is stable.
  auto again = ParseApplication(ToJson(*app), Completeness::kComplete, Known);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(json::serialize(ToJson(*again)), json::serialize(ToJson(*app)));
}

TEST(Application, ReportsEveryBadFieldByPath) {
  json::value v = Valid();
  auto& g0 = v.at("gpus").as_array()[0].as_object();
  g0["quantity"] = 0;
  g0["model"] = "h200-nope";
  g0["upload_gbps"] = -1;
  g0["location"].as_object()["country"] = "XX";
  auto& g1 = v.at("gpus").as_array()[1].as_object();
  g1["availability"].as_object()["timezone"] = "Mars/Olympus";
  g1["availability"].as_object()["windows"].as_array()[0].as_object()["end"] = "07:00";
  v.as_object()["contact"].as_object()["email"] = "not-an-email";
  v.as_object()["infrastructure"].as_object()["commitment_months"] = 5;
  auto app = ParseApplication(v, Completeness::kComplete, Known);
  ASSERT_FALSE(app.ok());
  const Status st = app.status();
  const auto& f = st.fields();
  EXPECT_EQ(f.at("gpus[0].quantity"), "must be at least 1");
  EXPECT_TRUE(f.count("gpus[0].model"));
  EXPECT_TRUE(f.count("gpus[0].upload_gbps"));
  EXPECT_TRUE(f.count("gpus[0].location.country"));
  EXPECT_TRUE(f.count("gpus[1].availability.timezone"));
  EXPECT_TRUE(f.count("gpus[1].availability.windows[0].end"));
  EXPECT_TRUE(f.count("contact.email"));
  EXPECT_TRUE(f.count("infrastructure.commitment_months"));
  EXPECT_EQ(f.size(), 8u);
}

TEST(Application, DraftsMayBeIncompleteButNotWrong) {
  auto draft = ParseApplication(ParseJson(R"({"contact": {"full_name": "Ada"}})").value(),
                                Completeness::kDraft, Known);
  ASSERT_TRUE(draft.ok());
  EXPECT_FALSE(CheckComplete(*draft, Known).ok());
  EXPECT_TRUE(CheckComplete(*draft, Known).fields().count("contact.email"));
  auto wrong = ParseApplication(ParseJson(R"({"gpus": [{"model": "l4-24gb", "quantity": 2000}]})").value(),
                                Completeness::kDraft, Known);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().fields().at("gpus[0].quantity"), "must be at most 1024");
}

TEST(Application, SuggestsTierFromInfrastructure) {
  auto app = ParseApplication(Valid(), Completeness::kComplete, Known).value();
  // The second entry has a schedule and 0.5 Gbps up: community, with reasons.
  TierSuggestion s = SuggestTier(app);
  EXPECT_EQ(s.tier, "community");
  EXPECT_EQ(s.reasons.size(), 2u);
  app.gpus.pop_back();
  EXPECT_EQ(SuggestTier(app).tier, "enterprise");
  app.infrastructure.ups = false;
  EXPECT_EQ(SuggestTier(app).tier, "community");
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

}  // namespace
}  // namespace gpunex::platform::applications
