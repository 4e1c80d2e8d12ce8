// The provider's commands: machines, gpus, prices, availability, maintenance, offers
// mine, reliability, earnings, payouts, payout-settings, tokens (docs/cli.md).
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/search.h"

namespace gpunex::cli {
namespace {

const std::vector<Column> kMachineColumns = {
    {"ID", "id"},
    {"NAME", "name"},
    {"STATUS", "status"},
    {"HOST", "host", Show::kText, true},
    {"AGENT", "agent_version", Show::kText, true},
    {"EMULATED", "emulated"},
    {"LAST_SEEN", "last_seen"},
    {"STATUS_SINCE", "status_since", Show::kText, true},
};

const std::vector<Column> kPriceColumns = {
    {"GPU_MODEL", "gpu_model"},
    {"USDC/GPU/H", "price_micro", Show::kMoney},
    {"UPDATED", "updated_at"},
};

const std::vector<Column> kWindowColumns = {
    {"ID", "id"},
    {"STATE", "state"},
    {"START", "start"},
    {"END", "end"},
    {"CATEGORY", "category"},
    {"REASON", "reason"},
    {"PLANNED", "planned", Show::kText, true},
};

const std::vector<Column> kMyOfferColumns = {
    {"ID", "id"},
    {"MACHINE", "machine_id"},
    {"GPU", "gpu_name"},
    {"FREE", "gpus_available"},
    {"USDC/GPU/H", "price_micro", Show::kMoney},
    {"POSITION", "rank.position"},
    {"OF", "rank.of"},
    {"NEXT_PLACE_USDC", "rank.price_for_next_place_micro", Show::kMoney, true},
    {"SUMMARY", "rank.summary", Show::kText, true},
};

const std::vector<Column> kPayoutColumns = {
    {"ID", "id"},
    {"STATE", "state"},
    {"METHOD", "method"},
    {"AMOUNT_USDC", "amount_micro", Show::kMoney},
    {"CREATED", "created_at"},
    {"REFERENCE", "reference", Show::kText, true},
};

const std::vector<Column> kPayoutSettingsColumns = {
    {"SCHEDULE", "schedule"},  {"THRESHOLD_USDC", "threshold_micro", Show::kMoney},
    {"METHOD", "method"},      {"HOLD_UNTIL", "hold_until"},
    {"CHANGED", "changed_at"},
};

const std::vector<Column> kTokenColumns = {
    {"ID", "id"},
    {"NAME", "name"},
    {"PREFIX", "prefix"},
    {"ACTIVE", "active"},
    {"CREATED", "created_at"},
    {"LAST_USED", "last_used_at"},
    {"REVOKED", "revoked_at", Show::kText, true},
};

// GPU model=USDC pairs as the prices' items.
json::object PriceItems(const std::vector<std::string>& pairs) {
  json::array items;
  for (const std::string& pair : pairs) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw CliError(kExitUsage, "prices set takes MODEL=USDC pairs (not \"" + pair + "\")");
    }
    StatusOr<int64_t> micro = ParseUsdc(pair.substr(eq + 1), pair.substr(0, eq));
    if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
    items.push_back(json::object{{"gpu_model", pair.substr(0, eq)}, {"price_micro", *micro}});
  }
  return json::object{{"items", std::move(items)}};
}

// "mon,tue 08:00-20:00" as a window of a schedule.
json::object WindowOf(const std::string& spec) {
  const size_t space = spec.find(' ');
  const size_t dash = spec.find('-', space == std::string::npos ? 0 : space);
  if (space == std::string::npos || dash == std::string::npos) {
    throw CliError(kExitUsage, "--window takes 'mon,tue 08:00-20:00' (not \"" + spec + "\")");
  }
  json::array days;
  std::stringstream in(spec.substr(0, space));
  for (std::string d; std::getline(in, d, ',');) days.emplace_back(d);
  return json::object{{"days", std::move(days)},
                      {"start", spec.substr(space + 1, dash - space - 1)},
                      {"end", spec.substr(dash + 1)}};
}

void AddMachines(CLI::App& app, Context& ctx) {
  CLI::App* machines = Noun(app, "machines", "your machines (providers)");
  auto limit = std::make_shared<int>(0);
  CLI::App* list = machines->add_subcommand("list", "your machines");
  list->add_option("--limit", *limit, "at most this many (0: all)");
  list->callback([limit, &ctx] {
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/machines", 500, *limit), kMachineColumns);
  });
  auto id = std::make_shared<std::string>();
  CLI::App* get = machines->add_subcommand("get", "one machine, with its GPUs");
  get->add_option("id", *id, "the machine's id")->required();
  get->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", PathOf("/api/v1/machines/{}", {*id})), kMachineColumns);
  });
  auto name = std::make_shared<std::string>();
  CLI::App* rename = machines->add_subcommand("rename", "name a machine");
  rename->add_option("id", *id, "the machine's id")->required();
  rename->add_option("name", *name, "its new name")->required();
  rename->callback([id, name, &ctx] {
    ctx.PrintOne(ctx.authed().Call("PATCH", PathOf("/api/v1/machines/{}", {*id}),
                                   json::value(json::object{{"name", *name}})),
                 kMachineColumns);
  });

  CLI::App* gpus = Noun(app, "gpus", "offer a machine's GPUs or hold them back");
  auto gpu = std::make_shared<std::string>();
  for (const bool enable : {true, false}) {
    CLI::App* c = gpus->add_subcommand(enable ? "enable" : "disable",
                                       enable ? "offer a GPU" : "stop offering a GPU");
    c->add_option("machine", *id, "the machine's id")->required();
    c->add_option("gpu", *gpu, "the GPU's id")->required();
    c->callback([id, gpu, enable, &ctx] {
      ctx.PrintOne(ctx.authed().Call("PATCH", PathOf("/api/v1/machines/{}/gpus/{}", {*id, *gpu}),
                                     json::value(json::object{{"enabled", enable}})),
                   kMachineColumns);
    });
  }
}

void AddPrices(CLI::App& app, Context& ctx) {
  CLI::App* prices = Noun(app, "prices", "your hourly prices per GPU model");
  auto machine = std::make_shared<std::string>();
  CLI::App* get = prices->add_subcommand("get", "your prices (or one machine's)");
  get->add_option("--machine", *machine, "a machine's overrides and effective prices");
  get->callback([machine, &ctx] {
    if (machine->empty()) {
      ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/providers/me/prices", 0, 0), kPriceColumns);
      return;
    }
    const json::value v =
        ctx.authed().Call("GET", PathOf("/api/v1/machines/{}/prices", {*machine}));
    if (ctx.format() == Format::kJson || ctx.format() == Format::kYaml) {
      ctx.PrintOne(v, {});
      return;
    }
    const json::value* effective = At(v, "effective");
    ctx.PrintList(
        effective != nullptr && effective->is_array() ? effective->as_array() : json::array(),
        kPriceColumns);
  });
  auto pairs = std::make_shared<std::vector<std::string>>();
  CLI::App* set = prices->add_subcommand("set", "set prices: MODEL=USDC per GPU-hour");
  set->add_option("prices", *pairs, "e.g. rtx-4090=0.45 a100-80gb=1.2")->required();
  set->add_option("--machine", *machine, "set one machine's overrides instead");
  set->callback([machine, pairs, &ctx] {
    const std::string target = machine->empty() ? "/api/v1/providers/me/prices"
                                                : PathOf("/api/v1/machines/{}/prices", {*machine});
    const json::value v = ctx.authed().Call("PUT", target, json::value(PriceItems(*pairs)));
    if (ctx.format() == Format::kJson || ctx.format() == Format::kYaml) {
      ctx.PrintOne(v, {});
      return;
    }
    const json::value* items = At(v, machine->empty() ? "items" : "effective");
    ctx.PrintList(items != nullptr && items->is_array() ? items->as_array() : json::array(),
                  kPriceColumns);
  });
}

void AddAvailability(CLI::App& app, Context& ctx) {
  CLI::App* availability = Noun(app, "availability", "when your machines are offered");
  auto id = std::make_shared<std::string>();
  CLI::App* get = availability->add_subcommand("get", "a machine's schedule");
  get->add_option("machine", *id, "the machine's id")->required();
  get->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", PathOf("/api/v1/machines/{}/availability", {*id})), {});
  });
  struct Set {
    bool always = false;
    std::string timezone = "UTC";
    std::vector<std::string> windows;
  };
  auto s = std::make_shared<Set>();
  CLI::App* set = availability->add_subcommand("set", "a machine's schedule");
  set->add_option("machine", *id, "the machine's id")->required();
  set->add_flag("--always", s->always, "offered at all times");
  set->add_option("--timezone", s->timezone, "the windows' time zone (IANA, e.g. Europe/Rome)");
  set->add_option("--window", s->windows, "'mon,tue 08:00-20:00' (repeat)");
  set->callback([id, s, &ctx] {
    if (s->always == !s->windows.empty()) {
      throw CliError(kExitUsage, "availability set takes --always or --window (one of them)");
    }
    json::object schedule{{"kind", "always"}};
    if (!s->always) {
      json::array windows;
      for (const std::string& w : s->windows) windows.push_back(WindowOf(w));
      schedule = json::object{
          {"kind", "schedule"}, {"timezone", s->timezone}, {"windows", std::move(windows)}};
    }
    ctx.PrintOne(ctx.authed().Call("PUT", PathOf("/api/v1/machines/{}/availability", {*id}),
                                   json::value(json::object{{"schedule", std::move(schedule)}})),
                 {});
  });

  CLI::App* maintenance = Noun(app, "maintenance", "declared maintenance windows");
  struct Add {
    std::string start, end, category = "other", reason;
  };
  auto a = std::make_shared<Add>();
  CLI::App* add = maintenance->add_subcommand("add", "declare a window (planned: 24 h ahead)");
  add->add_option("machine", *id, "the machine's id")->required();
  add->add_option("--start", a->start, "RFC 3339 time")->required();
  add->add_option("--end", a->end, "RFC 3339 time")->required();
  add->add_option("--category", a->category, "power, internet, disk, gpu, software or other");
  add->add_option("--reason", a->reason, "what is done")->required();
  add->callback([id, a, &ctx] {
    ctx.PrintOne(ctx.authed().Call("POST", PathOf("/api/v1/machines/{}/maintenance", {*id}),
                                   json::value(json::object{{"start", a->start},
                                                            {"end", a->end},
                                                            {"category", a->category},
                                                            {"reason", a->reason}})),
                 kWindowColumns);
  });
  CLI::App* list = maintenance->add_subcommand("list", "a machine's windows");
  list->add_option("machine", *id, "the machine's id")->required();
  list->callback([id, &ctx] {
    ctx.PrintList(
        FetchItems(ctx.authed(), PathOf("/api/v1/machines/{}/maintenance", {*id}), 100, 0),
        kWindowColumns);
  });
  auto window = std::make_shared<std::string>();
  CLI::App* cancel = maintenance->add_subcommand("cancel", "cancel a window");
  cancel->add_option("machine", *id, "the machine's id")->required();
  cancel->add_option("window", *window, "the window's id")->required();
  cancel->callback([id, window, &ctx] {
    ctx.PrintOne(
        ctx.authed().Call("DELETE", PathOf("/api/v1/machines/{}/maintenance/{}", {*id, *window})),
        kWindowColumns);
  });
}

void AddEarnings(CLI::App& app, Context& ctx) {
  CLI::App* offers = Noun(app, "offers", "the marketplace's offers");
  CLI::App* mine = offers->add_subcommand("mine", "your offers and where they rank");
  mine->callback([&ctx] {
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/providers/me/offers", 0, 0), kMyOfferColumns);
  });

  auto machine = std::make_shared<std::string>();
  CLI::App* reliability = app.add_subcommand("reliability", "your reliability score");
  reliability->add_option("--machine", *machine, "one machine's");
  reliability->callback([machine, &ctx] {
    const std::string target = machine->empty()
                                   ? "/api/v1/providers/me/reliability"
                                   : PathOf("/api/v1/machines/{}/reliability", {*machine});
    const json::value v = ctx.authed().Call("GET", target);
    ctx.PrintOne(v, {{"SCORE", "score"},
                     {"STATUS", "status"},
                     {"UPTIME_24H", "uptime_24h"},
                     {"UPTIME_7D", "uptime_7d"},
                     {"UPTIME_30D", "uptime_30d"},
                     {"THRESHOLD", "threshold"},
                     {"COMPUTED", "computed_at"}});
  });

  struct Earnings {
    std::string from, to, group;
  };
  auto e = std::make_shared<Earnings>();
  CLI::App* earnings = app.add_subcommand("earnings", "what your machines earned");
  earnings->add_option("--from", e->from, "a time or a date (default: 30 days ago)");
  earnings->add_option("--to", e->to, "a time or a date, exclusive");
  earnings->add_option("--group", e->group, "model, gpu or day");
  earnings->callback([e, &ctx] {
    Query q;
    if (!e->from.empty()) q.emplace_back("from", e->from);
    if (!e->to.empty()) q.emplace_back("to", e->to);
    if (!e->group.empty()) q.emplace_back("group", e->group);
    const json::value v =
        ctx.authed().Call("GET", "/api/v1/providers/me/earnings" + QueryString(q));
    if (ctx.format() == Format::kJson || ctx.format() == Format::kYaml) {
      ctx.PrintOne(v, {});
      return;
    }
    const json::value* totals = At(v, "totals");
    if (totals != nullptr && ctx.format() != Format::kQuiet && ctx.format() != Format::kCsv) {
      ctx.PrintOne(*totals, {{"PENDING_USDC", "pending_micro", Show::kMoney},
                             {"AVAILABLE_USDC", "available_micro", Show::kMoney},
                             {"IN_PAYMENT_USDC", "in_payment_micro", Show::kMoney},
                             {"PAID_USDC", "paid_micro", Show::kMoney}});
      std::cout << "\n";
    }
    const json::value* rows = At(v, "rows");
    ctx.PrintList(rows != nullptr && rows->is_array() ? rows->as_array() : json::array(),
                  {{"KEY", "key"},
                   {"LABEL", "label"},
                   {"RENTALS", "rentals"},
                   {"GPU_SECONDS", "gpu_seconds"},
                   {"GROSS_USDC", "gross_micro", Show::kMoney},
                   {"COMMISSION_USDC", "commission_micro", Show::kMoney},
                   {"REFUNDS_USDC", "refunds_micro", Show::kMoney},
                   {"NET_USDC", "net_micro", Show::kMoney}});
  });

  CLI::App* payouts = Noun(app, "payouts", "your payouts");
  CLI::App* list = payouts->add_subcommand("list", "your payouts, newest first");
  list->callback([&ctx] {
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/providers/me/payouts", 200, 0), kPayoutColumns);
  });
  auto id = std::make_shared<std::string>();
  CLI::App* get = payouts->add_subcommand("get", "one payout with its lines");
  get->add_option("id", *id, "the payout's id")->required();
  get->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", PathOf("/api/v1/providers/me/payouts/{}", {*id})),
                 kPayoutColumns);
  });

  CLI::App* settings = Noun(app, "payout-settings", "when and how you are paid");
  settings->add_subcommand("get", "your payout settings")->callback([&ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", "/api/v1/providers/me/payout-settings"),
                 kPayoutSettingsColumns);
  });
  struct Set {
    std::string schedule, threshold, method, email;
    bool password_stdin = false;
  };
  auto s = std::make_shared<Set>();
  CLI::App* set = settings->add_subcommand("set", "change the schedule, threshold or method");
  set->add_option("--schedule", s->schedule, "weekly, biweekly or monthly");
  set->add_option("--threshold", s->threshold, "the least USDC paid out");
  set->add_option("--method", s->method, "the method (needs a log-in: --email, and the password)");
  set->add_option("--email", s->email, "with --method: your account's email");
  set->add_flag("--password-stdin", s->password_stdin, "with --method: the password from stdin");
  set->callback([s, &ctx] {
    json::object body;
    if (!s->schedule.empty()) body["schedule"] = s->schedule;
    if (!s->threshold.empty()) {
      StatusOr<int64_t> micro = ParseUsdc(s->threshold, "--threshold");
      if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
      body["threshold_micro"] = *micro;
    }
    if (body.empty() && s->method.empty()) {
      throw CliError(kExitUsage, "payout-settings set takes --schedule, --threshold or --method");
    }
    if (s->method.empty()) {
      ctx.PrintOne(
          ctx.authed().Call("PUT", "/api/v1/providers/me/payout-settings", json::value(body)),
          kPayoutSettingsColumns);
      return;
    }
    body["method"] = s->method;
    WithSession(
        ctx, s->email, s->password_stdin, [&](Client& session, const std::string& password) {
          body["password"] = password;
          ctx.PrintOne(
              session.Call("PUT", "/api/v1/providers/me/payout-settings", json::value(body)),
              kPayoutSettingsColumns);
        });
  });
}

void AddTokens(CLI::App& app, Context& ctx) {
  CLI::App* tokens = Noun(app, "tokens", "agent tokens: what your machines' agents sign in with");
  tokens->add_subcommand("list", "your agent tokens")->callback([&ctx] {
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/providers/me/agent-tokens", 0, 0),
                  kTokenColumns);
  });
  struct Make {
    std::string name, email, id;
    bool password_stdin = false;
  };
  auto m = std::make_shared<Make>();
  // Making a token needs a log-in: an API key may not mint credentials.
  const auto print_secret = [&ctx](const json::value& t) {
    if (ctx.format() != Format::kTable) {
      ctx.PrintOne(t, kTokenColumns);
      return;
    }
    ctx.PrintOne(t, kTokenColumns);
    const json::value* secret = At(t, "token");
    if (secret != nullptr && secret->is_string()) {
      std::cout << "TOKEN:       " << secret->as_string() << "   (shown once)\n";
    }
    const json::value* install = At(t, "install_command");
    if (install != nullptr && install->is_string()) {
      std::cout << "INSTALL:     " << install->as_string() << "\n";
    }
  };
  CLI::App* create = tokens->add_subcommand("create", "make an agent token (needs a log-in)");
  create->add_option("--name", m->name, "a name for it");
  create->add_option("--email", m->email, "your account's email")->required();
  create->add_flag("--password-stdin", m->password_stdin, "read the password from stdin");
  create->callback([m, print_secret, &ctx] {
    WithSession(ctx, m->email, m->password_stdin, [&](Client& s, const std::string&) {
      json::object body;
      if (!m->name.empty()) body["name"] = m->name;
      print_secret(s.Call("POST", "/api/v1/providers/me/agent-tokens", json::value(body)));
    });
  });
  CLI::App* rotate = tokens->add_subcommand("rotate", "replace a token (needs a log-in)");
  rotate->add_option("id", m->id, "the token's id")->required();
  rotate->add_option("--email", m->email, "your account's email")->required();
  rotate->add_flag("--password-stdin", m->password_stdin, "read the password from stdin");
  rotate->callback([m, print_secret, &ctx] {
    WithSession(ctx, m->email, m->password_stdin, [&](Client& s, const std::string&) {
      print_secret(s.Call("POST", PathOf("/api/v1/providers/me/agent-tokens/{}/rotate", {m->id})));
    });
  });
  CLI::App* revoke = tokens->add_subcommand("revoke", "revoke a token; its agents disconnect");
  revoke->add_option("id", m->id, "the token's id")->required();
  revoke->callback([m, &ctx] {
    ctx.authed().Call("DELETE", PathOf("/api/v1/providers/me/agent-tokens/{}", {m->id}));
    ctx.Note("revoked " + m->id);
  });
}

}  // namespace

void AddProviderCommands(CLI::App& app, Context& ctx) {
  AddMachines(app, ctx);
  AddPrices(app, ctx);
  AddAvailability(app, ctx);
  AddEarnings(app, ctx);
  AddTokens(app, ctx);
}

}  // namespace gpunex::cli
