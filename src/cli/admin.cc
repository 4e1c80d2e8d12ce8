// The operator's commands: applications, credits, refunds, ledger check, payout-runs
// (docs/cli.md). Each needs an API key with the admin scope.
#include <iostream>

#include "cli/commands.h"
#include "cli/search.h"

namespace gpunex::cli {
namespace {

const std::vector<Column> kApplicationColumns = {
    {"ID", "id"},
    {"STATUS", "status"},
    {"NAME", "contact.name"},
    {"EMAIL", "contact.email"},
    {"SUGGESTED_TIER", "suggested_tier"},
    {"AGE_DAYS", "age_business_days"},
    {"OVERDUE", "overdue", Show::kText, true},
    {"SUBMITTED", "submitted_at", Show::kText, true},
};

const std::vector<Column> kRunColumns = {
    {"ID", "id"},       {"STATE", "state"},        {"SCHEDULE", "schedule"},
    {"AS_OF", "as_of"}, {"CREATED", "created_at"},
};

}  // namespace

void AddAdminCommands(CLI::App& app, Context& ctx) {
  CLI::App* applications = Noun(app, "applications", "providers' applications (admins)");
  struct List {
    std::string status, q;
    int limit = 50;
  };
  auto l = std::make_shared<List>();
  CLI::App* list = applications->add_subcommand("list", "applications, oldest first");
  list->add_option("--status", l->status, "submitted, needs_info, approved, rejected, ...");
  list->add_option("--q", l->q, "words of the name or email");
  list->add_option("--limit", l->limit, "at most this many (0: all)");
  list->callback([l, &ctx] {
    Query q{{"sort", "oldest"}};
    if (!l->status.empty()) q.emplace_back("status", l->status);
    if (!l->q.empty()) q.emplace_back("q", l->q);
    ctx.PrintList(
        FetchItems(ctx.authed(), "/api/v1/provider-applications" + QueryString(q), 200, l->limit),
        kApplicationColumns);
  });
  auto id = std::make_shared<std::string>();
  CLI::App* get = applications->add_subcommand("get", "one application with its history");
  get->add_option("id", *id, "the application's id")->required();
  get->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", PathOf("/api/v1/provider-applications/{}", {*id})),
                 kApplicationColumns);
  });
  struct Decide {
    std::string decision, tier, message;
    bool override_suggestion = false;
  };
  auto d = std::make_shared<Decide>();
  CLI::App* decide = applications->add_subcommand("decide", "approve, reject or ask for more");
  decide->add_option("id", *id, "the application's id")->required();
  decide->add_option("decision", d->decision, "approve, reject or request_info")
      ->required()
      ->check(CLI::IsMember({"approve", "reject", "request_info"}));
  decide->add_option("--tier", d->tier, "with approve: the provider's tier");
  decide->add_option("--message", d->message, "what the applicant is told");
  decide->add_flag("--override-suggestion", d->override_suggestion,
                   "approve with another tier than the one suggested");
  decide->callback([id, d, &ctx] {
    json::object body{{"decision", d->decision}};
    if (!d->tier.empty()) body["tier"] = d->tier;
    if (!d->message.empty()) body["message"] = d->message;
    if (d->override_suggestion) body["override_suggestion"] = true;
    ctx.PrintOne(
        ctx.authed().Call("POST", PathOf("/api/v1/provider-applications/{}/decision", {*id}),
                          json::value(body)),
        kApplicationColumns);
  });

  CLI::App* credits = Noun(app, "credits", "operator credits to a balance (admins)");
  struct Credit {
    std::string user_id, email, amount, reference, idempotency_key;
  };
  auto c = std::make_shared<Credit>();
  CLI::App* add = credits->add_subcommand("add", "credit a user's balance");
  add->add_option("--user", c->user_id, "the user's id");
  add->add_option("--email", c->email, "or the user's email");
  add->add_option("--amount", c->amount, "USDC")->required();
  add->add_option("--reference", c->reference, "why (kept in the ledger)")->required();
  add->add_option("--idempotency-key", c->idempotency_key, "makes a retry safe");
  add->callback([c, &ctx] {
    if (c->user_id.empty() == c->email.empty()) {
      throw CliError(kExitUsage, "credits add takes --user or --email (one of them)");
    }
    StatusOr<int64_t> micro = ParseUsdc(c->amount, "--amount");
    if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
    json::object body{{"amount_micro", *micro}, {"reference", c->reference}};
    if (!c->user_id.empty()) body["user_id"] = c->user_id;
    if (!c->email.empty()) body["email"] = c->email;
    std::vector<std::pair<std::string, std::string>> headers;
    if (!c->idempotency_key.empty()) headers.emplace_back("Idempotency-Key", c->idempotency_key);
    ctx.PrintOne(ctx.authed().Call("POST", "/api/v1/admin/credits", json::value(body), headers),
                 {{"TRANSFER", "transfer.id"},
                  {"AMOUNT_USDC", "transfer.amount_micro", Show::kMoney},
                  {"BALANCE_USDC", "balance_micro", Show::kMoney}});
  });

  CLI::App* refunds = Noun(app, "refunds", "refunds of what a rental was charged (admins)");
  struct Refund {
    std::string rental_id, amount, reason, idempotency_key;
  };
  auto rf = std::make_shared<Refund>();
  CLI::App* refund = refunds->add_subcommand("add", "give back part or all of a rental's charge");
  refund->add_option("rental", rf->rental_id, "the rental's id (ended or ending)")->required();
  refund->add_option("--amount", rf->amount, "USDC, at most charged less refunded")->required();
  refund->add_option("--reason", rf->reason, "what the customer reads on the statement")
      ->required();
  refund->add_option("--idempotency-key", rf->idempotency_key, "makes a retry safe");
  refund->callback([rf, &ctx] {
    StatusOr<int64_t> micro = ParseUsdc(rf->amount, "--amount");
    if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
    std::vector<std::pair<std::string, std::string>> headers;
    if (!rf->idempotency_key.empty()) headers.emplace_back("Idempotency-Key", rf->idempotency_key);
    ctx.PrintOne(
        ctx.authed().Call(
            "POST", PathOf("/api/v1/admin/rentals/{}/refund", {rf->rental_id}),
            json::value(json::object{{"amount_micro", *micro}, {"reason", rf->reason}}), headers),
        {{"RENTAL", "rental.id"},
         {"CHARGED_USDC", "rental.charged_micro", Show::kMoney},
         {"REFUNDED_USDC", "rental.refunded_micro", Show::kMoney},
         {"TRANSFERS", "transfers", Show::kList}});
  });

  CLI::App* ledger = Noun(app, "ledger", "the double-entry ledger (admins)");
  ledger->add_subcommand("check", "every balance against its transfers; exit 1 when off")
      ->callback([&ctx] {
        const json::value v = ctx.authed().Call("GET", "/api/v1/admin/ledger/check");
        ctx.PrintOne(v, {{"OK", "ok"},
                         {"ACCOUNTS", "accounts"},
                         {"TRANSFERS", "transfers"},
                         {"SUM_USDC", "sum_micro", Show::kMoney},
                         {"MISMATCHES", "mismatches", Show::kList}});
        const json::value* ok = At(v, "ok");
        if (ok == nullptr || !ok->is_bool() || !ok->as_bool()) {
          throw CliError(kExitFailure, "the ledger does not balance");
        }
      });

  CLI::App* runs = Noun(app, "payout-runs", "payout runs (admins)");
  struct Start {
    std::string as_of, schedule = "weekly", eur_rate;
  };
  auto s = std::make_shared<Start>();
  CLI::App* start =
      runs->add_subcommand("start", "start a run (the same as_of and schedule: that run)");
  start->add_option("--as-of", s->as_of, "RFC 3339 time the run pays up to")->required();
  start->add_option("--schedule", s->schedule, "weekly, biweekly or monthly");
  start->add_option("--eur-rate", s->eur_rate, "USDC to EUR, e.g. 0.92");
  start->callback([s, &ctx] {
    json::object body{{"as_of", s->as_of}, {"schedule", s->schedule}};
    if (!s->eur_rate.empty()) body["eur_rate"] = s->eur_rate;
    ctx.PrintOne(ctx.authed().Call("POST", "/api/v1/admin/payout-runs", json::value(body)),
                 kRunColumns);
  });
  runs->add_subcommand("list", "every run")->callback([&ctx] {
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/admin/payout-runs", 0, 0), kRunColumns);
  });
  CLI::App* get_run = runs->add_subcommand("get", "one run with its payouts");
  get_run->add_option("id", *id, "the run's id")->required();
  get_run->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", PathOf("/api/v1/admin/payout-runs/{}", {*id})),
                 kRunColumns);
  });
}

}  // namespace gpunex::cli
