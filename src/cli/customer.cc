// The customer's commands: offers search, rentals create|list|get|stop|wait, jobs,
// balance, statement, topup, ssh-keys (docs/cli.md).
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/search.h"
#include "common/ids.h"

namespace gpunex::cli {
namespace {

const std::vector<Column> kOfferColumns = {
    {"ID", "id"},
    {"GPU", "gpu_name"},
    {"FREE", "gpus_available"},
    {"TOTAL", "gpus_total", Show::kText, true},
    {"VRAM_GB", "vram_gb"},
    {"USDC/GPU/H", "price_micro", Show::kMoney},
    {"PERF", "performance_score"},
    {"RELIABILITY", "reliability_score"},
    {"REGION", "region"},
    {"COUNTRY", "country"},
    {"TIER", "tier"},
    {"POSITION", "position", Show::kText, true},
    {"DOWN_MBPS", "down_mbps", Show::kText, true},
    {"CUDA", "cuda_version", Show::kText, true},
    {"PROVIDER", "provider.pseudonym", Show::kText, true},
};

const std::vector<Column> kRentalColumns = {
    {"ID", "id"},
    {"STATE", "state"},
    {"GPUS", "gpus"},
    {"IMAGE", "image"},
    {"USDC/H", "cost_per_hour_micro", Show::kMoney},
    {"CHARGED", "charged_micro", Show::kMoney},
    {"CREATED", "created_at"},
    {"END_REASON", "end_reason"},
    {"OFFER", "offer_id", Show::kText, true},
    {"RUNNING_AT", "running_at", Show::kText, true},
    {"ENDED_AT", "ended_at", Show::kText, true},
    {"EXIT_CODE", "exit_code", Show::kText, true},
};

const std::vector<Column> kJobColumns = {
    {"ID", "id"},
    {"STATE", "state"},
    {"GPUS", "gpus"},
    {"GPU_MODELS", "gpu_models", Show::kList},
    {"MAX_USDC/GPU/H", "max_price_micro", Show::kMoney},
    {"IMAGE", "image"},
    {"RENTAL", "rental_id"},
    {"RENTAL_STATE", "rental_state"},
    {"CREATED", "created_at", Show::kText, true},
    {"DETAIL", "detail", Show::kText, true},
};

const std::vector<Column> kBalanceColumns = {
    {"BALANCE_USDC", "balance_micro", Show::kMoney},
    {"RUNNING_USDC/H", "running_cost_per_hour_micro", Show::kMoney},
    {"SECONDS_LEFT", "seconds_left"},
    {"LOW", "low"},
    {"RUNNING_RENTALS", "running_rentals"},
};

const std::vector<Column> kStatementColumns = {
    {"ID", "id"},
    {"AT", "at"},
    {"KIND", "kind"},
    {"AMOUNT_USDC", "amount_micro", Show::kMoney},
    {"RENTAL", "rental_id"},
    {"REFERENCE", "reference"},
};

const std::vector<Column> kTopupColumns = {
    {"ID", "id"},
    {"STATUS", "status"},
    {"AMOUNT_USDC", "amount_micro", Show::kMoney},
    {"EXPIRES_AT", "expires_at"},
    {"URL", "url"},
    {"CREDITED_USDC", "credited_micro", Show::kMoney, true},
    {"SIGNATURE", "signature", Show::kText, true},
};

const std::vector<Column> kSshKeyColumns = {
    {"ID", "id"},
    {"NAME", "name"},
    {"TYPE", "type"},
    {"FINGERPRINT", "fingerprint"},
    {"CREATED", "created_at"},
};

// What a rental and a job take alike: the container.
struct ContainerFlags {
  std::string image;
  std::vector<std::string> env;
  std::vector<std::string> ports;
  std::vector<std::string> command;
  int64_t max_duration_s = 0;
  std::string max_cost;
  std::string idempotency_key;

  void Bind(CLI::App* c) {
    c->add_option("--image", image, "the container image, e.g. pytorch/pytorch:latest")->required();
    c->add_option("--env", env, "K=V, an environment variable of the container (repeat)");
    c->add_option("--port", ports,
                  "PORT[/http|/tcp][/public], a port of the container to reach (repeat)");
    c->add_option("--max-duration", max_duration_s, "end it after this many seconds");
    c->add_option("--max-cost", max_cost, "end it once it has cost this many USDC");
    c->add_option("--idempotency-key", idempotency_key,
                  "a key that makes retries of this request safe (one is made when absent)");
    c->add_option("command", command, "the command and its arguments, after --");
  }

  void Fill(json::object* body) const {
    body->emplace("image", image);
    if (!command.empty()) {
      json::array argv;
      for (const std::string& a : command) argv.emplace_back(a);
      body->emplace("command", std::move(argv));
    }
    if (!env.empty()) {
      json::object e;
      for (const std::string& kv : env) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
          throw CliError(kExitUsage, "--env takes K=V (not \"" + kv + "\")");
        }
        e[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      body->emplace("env", std::move(e));
    }
    if (!ports.empty()) {
      json::array list;
      for (const std::string& spec : ports) list.push_back(ParsePort(spec));
      body->emplace("ports", std::move(list));
    }
    if (max_duration_s > 0) body->emplace("max_duration_s", max_duration_s);
    if (!max_cost.empty()) {
      StatusOr<int64_t> micro = ParseUsdc(max_cost, "--max-cost");
      if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
      body->emplace("max_cost_micro", *micro);
    }
  }

  static json::object ParsePort(const std::string& spec) {
    std::vector<std::string> parts;
    std::stringstream in(spec);
    for (std::string part; std::getline(in, part, '/');) parts.push_back(part);
    json::object p;
    try {
      size_t used = 0;
      const int port = std::stoi(parts.at(0), &used);
      if (used != parts[0].size()) throw std::invalid_argument(spec);
      p["port"] = port;
    } catch (const std::exception&) {
      throw CliError(kExitUsage, "--port takes PORT[/http|/tcp][/public] (not \"" + spec + "\")");
    }
    for (size_t i = 1; i < parts.size(); ++i) {
      if (parts[i] == "http" || parts[i] == "tcp") {
        p["protocol"] = parts[i];
      } else if (parts[i] == "public") {
        p["public"] = true;
      } else {
        throw CliError(kExitUsage, "--port takes PORT[/http|/tcp][/public] (not \"" + spec + "\")");
      }
    }
    return p;
  }
};

// A create that may be retried: the same Idempotency-Key on every try, so a retry after a
// lost answer never makes a second rental (docs/api.md, "Idempotency-Key").
json::value CreateWithRetries(Context& ctx, const std::string& target, const json::object& body,
                              std::string key) {
  Client& c = ctx.authed();
  if (key.empty()) key = NewId("cli");
  const std::vector<std::pair<std::string, std::string>> headers = {{"Idempotency-Key", key}};
  for (int attempt = 1;; ++attempt) {
    try {
      Response r = c.Send("POST", target, json::value(body), headers);
      const bool transient =
          r.status == 503 || r.status == 502 || r.status == 504 ||
          (r.status == 409 && r.body.find("still in progress") != std::string::npos);
      if (!transient || attempt == 4) {
        c.CheckAnswer(r, "POST", target);
        return ParseJsonOr(r.body, nullptr);
      }
    } catch (const CliError& e) {
      if (e.code() != kExitFailure || std::string(e.what()).rfind("cannot reach", 0) != 0 ||
          attempt == 4) {
        throw;
      }
    }
    ctx.Note("retrying with Idempotency-Key " + key);
    Nap(1000 << (attempt - 1));
  }
}

std::string StateOf(const json::value& v) {
  const json::value* s = At(v, "state");
  return s != nullptr && s->is_string() ? std::string(s->as_string()) : "";
}

// Polls the rental until it reaches `want` (running or ended); exit 3 after `timeout_s`.
json::value WaitFor(Context& ctx, const std::string& id, const std::string& want, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  const std::string target = PathOf("/api/v1/rentals/{}", {id});
  for (;;) {
    json::value rental = ctx.authed().Call("GET", target);
    const std::string state = StateOf(rental);
    if (state == want) return rental;
    if (want == "running" && (state == "ending" || state == "ended")) {
      const json::value* reason = At(rental, "end_reason");
      throw CliError(kExitFailure, "rental " + id + " is " + state + " and will not run" +
                                       (reason != nullptr && reason->is_string()
                                            ? " (" + std::string(reason->as_string()) + ")"
                                            : ""));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw CliError(kExitTimeout, "rental " + id + " is still " + state + " after " +
                                       std::to_string(timeout_s) + " s (waiting for " + want + ")");
    }
    Nap(500);
  }
}

// Prints the object at `target` each time its state changes, until it has ended: one
// JSON line each with -o json, else one table row each (the header once).
void Watch(Context& ctx, const std::string& target, const std::vector<Column>& columns) {
  std::string last;
  bool header = true;
  for (;;) {
    json::value v = ctx.authed().Call("GET", target);
    const std::string state = StateOf(v);
    if (state != last) {
      last = state;
      const Format f = ctx.format();
      if (f == Format::kJson) {
        std::cout << ToJsonText(v) << "\n" << std::flush;
      } else {
        std::string table = RenderList(json::array{v}, columns, f, ctx.color());
        if (!header && f != Format::kQuiet) table = table.substr(table.find('\n') + 1);
        header = false;
        std::cout << table << std::flush;
      }
    }
    if (state == "ended") return;
    Nap(1000);
  }
}

void AddOffers(CLI::App& app, Context& ctx) {
  CLI::App* offers = Noun(app, "offers", "the marketplace's offers");
  CLI::App* search = offers->add_subcommand("search", "search the marketplace");
  struct Search {
    std::string gpu, max_price, region, country, tier, sort, where, columns;
    int gpus = 0, limit = 20;
    double min_reliability = -1;
    bool include_busy = false;
  };
  auto s = std::make_shared<Search>();
  search->add_option("--gpu", s->gpu, "GPU models (catalog ids, comma-separated)");
  search->add_option("--gpus", s->gpus, "at least this many free GPUs");
  search->add_flag("--include-busy", s->include_busy,
                   "offers whose GPUs are all busy too (--gpus then counts the offer's GPUs)");
  search->add_option("--max-price", s->max_price, "at most this many USDC per GPU-hour");
  search->add_option("--region", s->region, "the region");
  search->add_option("--country", s->country, "the country (ISO 3166-1 alpha-2)");
  search->add_option("--tier", s->tier, "the provider's tier");
  search->add_option("--min-reliability", s->min_reliability, "a reliability score (0-100)");
  search->add_option("--sort", s->sort, "rank, price, -performance, -value or -reliability");
  search->add_option("--limit", s->limit, "at most this many offers (0: all)");
  search->add_option("--where", s->where,
                     "terms like 'reliability>=90 price<=0.5 gpu=rtx-4090' (docs/cli.md)");
  search->add_option("--columns", s->columns, "with -o csv: skypilot writes SkyPilot's catalog");
  search->callback([s, &ctx] {
    Query q;
    if (!s->gpu.empty()) q.emplace_back("gpu_model", s->gpu);
    if (s->gpus > 0) q.emplace_back("min_gpus", std::to_string(s->gpus));
    if (!s->max_price.empty()) {
      StatusOr<int64_t> micro = ParseUsdc(s->max_price, "--max-price");
      if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
      q.emplace_back("max_price_micro", std::to_string(*micro));
    }
    if (!s->region.empty()) q.emplace_back("region", s->region);
    if (!s->country.empty()) q.emplace_back("country", s->country);
    if (!s->tier.empty()) q.emplace_back("tier", s->tier);
    if (s->min_reliability >= 0) {
      q.emplace_back("min_reliability", ToJsonText(json::value(s->min_reliability)));
    }
    if (!s->sort.empty()) q.emplace_back("sort", s->sort);
    if (s->include_busy) q.emplace_back("include_busy", "true");
    StatusOr<Query> where = WhereToQuery(s->where);
    if (!where.ok()) throw CliError(kExitUsage, where.status().message());
    q.insert(q.end(), where->begin(), where->end());
    if (!s->columns.empty() && s->columns != "skypilot") {
      throw CliError(kExitUsage, "--columns takes skypilot (not \"" + s->columns + "\")");
    }
    json::array items = FetchItems(ctx.client(), "/api/v1/offers" + QueryString(q), 100, s->limit);
    if (s->columns == "skypilot") {
      if (ctx.format() != Format::kCsv) throw CliError(kExitUsage, "--columns needs -o csv");
      ctx.PrintList(SkyPilotRows(items), SkyPilotColumns());
      return;
    }
    ctx.PrintList(items, kOfferColumns);
  });
  CLI::App* get = offers->add_subcommand("get", "one offer");
  auto id = std::make_shared<std::string>();
  get->add_option("id", *id, "the offer's id")->required();
  get->callback([id, &ctx] {
    ctx.PrintOne(ctx.client().Call("GET", PathOf("/api/v1/offers/{}", {*id})), kOfferColumns);
  });
}

void AddRentals(CLI::App& app, Context& ctx) {
  CLI::App* rentals = Noun(app, "rentals", "your rentals: create, follow, reach, stop");

  CLI::App* create = rentals->add_subcommand("create", "rent GPUs of an offer");
  struct Create {
    std::string offer;
    int gpus = 1;
    bool wait = false;
    int timeout_s = 600;
    ContainerFlags container;
  };
  auto cr = std::make_shared<Create>();
  create->add_option("offer", cr->offer, "the offer's id")->required();
  create->add_option("--gpus", cr->gpus, "how many of its GPUs (default 1)");
  create->add_flag("--wait", cr->wait, "wait until the rental runs");
  create->add_option("--timeout", cr->timeout_s, "with --wait: give up after this many seconds");
  cr->container.Bind(create);
  create->callback([cr, &ctx] {
    json::object body{{"offer_id", cr->offer}, {"gpus", cr->gpus}};
    cr->container.Fill(&body);
    json::value rental =
        CreateWithRetries(ctx, "/api/v1/rentals", body, cr->container.idempotency_key);
    if (cr->wait) {
      rental = WaitFor(ctx, std::string(At(rental, "id")->as_string()), "running", cr->timeout_s);
    }
    ctx.PrintOne(rental, kRentalColumns);
  });

  CLI::App* list = rentals->add_subcommand("list", "your rentals, newest first");
  struct List {
    std::string state;
    int limit = 50;
  };
  auto ls = std::make_shared<List>();
  list->add_option("--state", ls->state, "active or ended");
  list->add_option("--limit", ls->limit, "at most this many (0: all)");
  list->callback([ls, &ctx] {
    std::string target = "/api/v1/rentals";
    if (!ls->state.empty()) target += "?state=" + UrlEncode(ls->state);
    ctx.PrintList(FetchItems(ctx.authed(), target, 200, ls->limit), kRentalColumns);
  });

  auto id = std::make_shared<std::string>();
  auto watch = std::make_shared<bool>(false);
  CLI::App* get = rentals->add_subcommand("get", "one rental");
  get->add_option("id", *id, "the rental's id")->required();
  get->add_flag("-w,--watch", *watch,
                "print it again at each change of state, until it has ended (-o json: JSON lines)");
  get->callback([id, watch, &ctx] {
    const std::string target = PathOf("/api/v1/rentals/{}", {*id});
    if (!*watch) {
      ctx.PrintOne(ctx.authed().Call("GET", target), kRentalColumns);
      return;
    }
    Watch(ctx, target, kRentalColumns);
  });

  CLI::App* stop = rentals->add_subcommand("stop", "end a rental (billing stops)");
  stop->add_option("id", *id, "the rental's id")->required();
  stop->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("POST", PathOf("/api/v1/rentals/{}/stop", {*id})),
                 kRentalColumns);
  });

  CLI::App* wait = rentals->add_subcommand("wait", "wait until a rental runs or has ended");
  struct Wait {
    std::string want = "running";
    int timeout_s = 600;
  };
  auto w = std::make_shared<Wait>();
  wait->add_option("id", *id, "the rental's id")->required();
  wait->add_option("--for", w->want, "running or ended")
      ->check(CLI::IsMember({"running", "ended"}));
  wait->add_option("--timeout", w->timeout_s, "give up after this many seconds (exit 3)");
  wait->callback(
      [id, w, &ctx] { ctx.PrintOne(WaitFor(ctx, *id, w->want, w->timeout_s), kRentalColumns); });
}

void AddJobs(CLI::App& app, Context& ctx) {
  CLI::App* jobs = Noun(app, "jobs", "jobs: the scheduler finds the offer");
  CLI::App* submit = jobs->add_subcommand("submit", "queue a job");
  struct Submit {
    std::string gpu, max_price, region, country;
    int gpus = 1;
    double min_reliability = -1, min_performance = -1;
    int min_vram = 0;
    int64_t deadline_s = 0;
    ContainerFlags container;
  };
  auto s = std::make_shared<Submit>();
  submit->add_option("--gpu", s->gpu, "GPU models it may run on (catalog ids, comma-separated)")
      ->required();
  submit->add_option("--gpus", s->gpus, "how many GPUs (default 1)");
  submit->add_option("--max-price", s->max_price, "at most this many USDC per GPU-hour")
      ->required();
  submit->add_option("--min-reliability", s->min_reliability, "a reliability score (0-100)");
  submit->add_option("--min-performance", s->min_performance, "a performance score");
  submit->add_option("--min-vram", s->min_vram, "GB of memory per GPU");
  submit->add_option("--region", s->region, "the region");
  submit->add_option("--country", s->country, "the country (ISO 3166-1 alpha-2)");
  submit->add_option("--deadline", s->deadline_s, "give up when not placed within this many s");
  s->container.Bind(submit);
  submit->callback([s, &ctx] {
    json::object body{{"gpus", s->gpus}};
    json::array models;
    std::stringstream in(s->gpu);
    for (std::string m; std::getline(in, m, ',');) {
      if (!m.empty()) models.emplace_back(m);
    }
    if (models.size() == 1) {
      body["gpu_model"] = models[0];
    } else {
      body["gpu_models"] = std::move(models);
    }
    StatusOr<int64_t> micro = ParseUsdc(s->max_price, "--max-price");
    if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
    body["max_price_micro"] = *micro;
    if (s->min_reliability >= 0) body["min_reliability"] = s->min_reliability;
    if (s->min_performance >= 0) body["min_performance"] = s->min_performance;
    if (s->min_vram > 0) body["min_vram_gb"] = s->min_vram;
    if (!s->region.empty()) body["region"] = s->region;
    if (!s->country.empty()) body["country"] = s->country;
    if (s->deadline_s > 0) body["deadline_s"] = s->deadline_s;
    s->container.Fill(&body);
    ctx.PrintOne(CreateWithRetries(ctx, "/api/v1/jobs", body, s->container.idempotency_key),
                 kJobColumns);
  });
  auto limit = std::make_shared<int>(50);
  CLI::App* list = jobs->add_subcommand("list", "your jobs, newest first");
  list->add_option("--limit", *limit, "at most this many (0: all)");
  list->callback([limit, &ctx] {
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/jobs", 200, *limit), kJobColumns);
  });
  auto id = std::make_shared<std::string>();
  CLI::App* get = jobs->add_subcommand("get", "one job, with its rental once placed");
  get->add_option("id", *id, "the job's id")->required();
  get->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", PathOf("/api/v1/jobs/{}", {*id})), kJobColumns);
  });
  CLI::App* cancel = jobs->add_subcommand("cancel", "cancel a queued job");
  cancel->add_option("id", *id, "the job's id")->required();
  cancel->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("POST", PathOf("/api/v1/jobs/{}/cancel", {*id})), kJobColumns);
  });
}

void AddMoney(CLI::App& app, Context& ctx) {
  CLI::App* balance = app.add_subcommand("balance", "your balance and what runs on it");
  balance->callback(
      [&ctx] { ctx.PrintOne(ctx.authed().Call("GET", "/api/v1/me/balance"), kBalanceColumns); });

  CLI::App* statement = app.add_subcommand("statement", "your ledger entries");
  struct Statement {
    std::string from, to;
    int limit = 100;
  };
  auto st = std::make_shared<Statement>();
  statement->add_option("--from", st->from, "a time or a date (2026-12-01)");
  statement->add_option("--to", st->to, "a time or a date, exclusive");
  statement->add_option("--limit", st->limit, "at most this many (0: all)");
  statement->callback([st, &ctx] {
    Query q;
    if (!st->from.empty()) q.emplace_back("from", st->from);
    if (!st->to.empty()) q.emplace_back("to", st->to);
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/me/statement" + QueryString(q), 500, st->limit),
                  kStatementColumns);
  });

  CLI::App* topup = app.add_subcommand("topup", "add USDC to your balance with Solana Pay");
  auto amount = std::make_shared<std::string>();
  topup->add_option("amount", *amount, "USDC, e.g. 25")->required();
  topup->callback([amount, &ctx] {
    StatusOr<int64_t> micro = ParseUsdc(*amount, "amount");
    if (!micro.ok()) throw CliError(kExitUsage, micro.status().message());
    json::value t = ctx.authed().Call("POST", "/api/v1/topups",
                                      json::value(json::object{{"amount_micro", *micro}}));
    ctx.PrintOne(t, kTopupColumns);
    if (ctx.format() == Format::kTable) {
      ctx.Note("Pay the URL with a Solana Pay wallet; `gpunex topups get ID` follows it.");
    }
  });
  CLI::App* topups = Noun(app, "topups", "your top-ups");
  auto id = std::make_shared<std::string>();
  CLI::App* get = topups->add_subcommand("get", "one top-up");
  get->add_option("id", *id, "the top-up's id")->required();
  get->callback([id, &ctx] {
    ctx.PrintOne(ctx.authed().Call("GET", PathOf("/api/v1/topups/{}", {*id})), kTopupColumns);
  });
  CLI::App* list = topups->add_subcommand("list", "your top-ups");
  list->callback(
      [&ctx] { ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/topups", 200, 0), kTopupColumns); });
}

void AddSshKeys(CLI::App& app, Context& ctx) {
  CLI::App* keys = Noun(app, "ssh-keys", "the SSH keys that sign in to your rentals");
  CLI::App* add = keys->add_subcommand("add", "add a public key");
  struct Add {
    std::string file, name;
  };
  auto a = std::make_shared<Add>();
  add->add_option("file", a->file, "the .pub file (default ~/.ssh/id_ed25519.pub)");
  add->add_option("--name", a->name, "a name for it");
  add->callback([a, &ctx] {
    std::string path = a->file;
    if (path.empty()) {
      const auto home = ctx.env("HOME");
      path = (home ? *home : std::string()) + "/.ssh/id_ed25519.pub";
    }
    std::string line;
    if (path == "-") {
      std::getline(std::cin, line);
    } else {
      std::ifstream in(path);
      if (!in) throw CliError(kExitFailure, "cannot read " + path);
      std::getline(in, line);
    }
    json::object body{{"public_key", line}};
    if (!a->name.empty()) body["name"] = a->name;
    ctx.PrintOne(ctx.authed().Call("POST", "/api/v1/me/ssh-keys", json::value(body)),
                 kSshKeyColumns);
  });
  CLI::App* list = keys->add_subcommand("list", "your SSH keys");
  list->callback([&ctx] {
    ctx.PrintList(FetchItems(ctx.authed(), "/api/v1/me/ssh-keys", 0, 0), kSshKeyColumns);
  });
  auto id = std::make_shared<std::string>();
  CLI::App* rm = keys->add_subcommand("rm", "remove a key");
  rm->add_option("id", *id, "the key's id")->required();
  rm->callback([id, &ctx] {
    ctx.authed().Call("DELETE", PathOf("/api/v1/me/ssh-keys/{}", {*id}));
    ctx.Note("removed " + *id);
  });
}

}  // namespace

void AddCustomerCommands(CLI::App& app, Context& ctx) {
  AddOffers(app, ctx);
  AddRentals(app, ctx);
  AddJobs(app, ctx);
  AddMoney(app, ctx);
  AddSshKeys(app, ctx);
}

}  // namespace gpunex::cli
