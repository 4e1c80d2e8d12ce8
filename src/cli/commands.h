// The command-line client's commands (docs/cli.md): each group registers its CLI11
// subcommands on the app, noun then verb, and runs against the platform through the
// Context every command shares (settings, the HTTP client, the output format).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/config.h"
#include "cli/output.h"

namespace gpunex::cli {

class Context {
 public:
  Context();

  // The global options, bound by main before parsing.
  Flags flags;
  std::string output;  // -o; "" means the command's default (a table)
  bool quiet = false;  // -q
  bool debug = false;  // --debug
  Env env = ProcessEnv;

  // The resolved settings (flags, environment, profile); resolved at first use, so that
  // `version` and `completion` need no config file. Throws CliError(kExitUsage) when the
  // flags, the environment or the file are wrong.
  const Settings& settings();
  // The HTTP client of the settings.
  Client& client();
  // Like client(), but refuses to run without an API key (exit 4, saying how to get one).
  Client& authed();

  Format format();
  // Whether stdout is a terminal and NO_COLOR is unset.
  bool color() const;
  // Whether stderr is a terminal (progress is shown only there).
  bool progress() const;

  void PrintList(const json::array& items, const std::vector<Column>& columns);
  void PrintOne(const json::value& item, const std::vector<Column>& columns);
  // A note for people, on stderr (never mixed into the data on stdout).
  void Note(const std::string& text) const;

 private:
  std::optional<Settings> settings_;
  std::unique_ptr<Client> client_;
};

// A path with `{}` replaced by each id in turn, percent-encoded.
std::string PathOf(std::string_view pattern, std::initializer_list<std::string_view> ids);

// Every item of a list route: pages of `page` items (0: the route is not paged) following
// next_cursor until `limit` items (0: all) have come.
json::array FetchItems(Client& client, const std::string& target, int page, int limit);

// A logged-in session for the few actions an API key may not take (creating API keys and
// agent tokens, changing the payout method): asks for the password (from the terminal
// without echo, or one line of stdin with `password_stdin`), logs in, runs `use` with a
// client that sends the session token, and logs out. Returns the log-in's user.
json::value WithSession(
    Context& ctx, const std::string& email, bool password_stdin,
    const std::function<void(Client& session, const std::string& password)>& use);

// Sleeps `ms` (an interrupt ends the process: terminal.h).
void Nap(int ms);

void AddAuthCommands(CLI::App& app, Context& ctx);
void AddCustomerCommands(CLI::App& app, Context& ctx);
void AddAccessCommands(CLI::App& app, Context& ctx);  // logs, ssh, exec, port-forward, cp
void AddProviderCommands(CLI::App& app, Context& ctx);
void AddAdminCommands(CLI::App& app, Context& ctx);
// `completion bash|zsh`: needs the whole tree, so it is added last.
void AddCompletionCommand(CLI::App& app, Context& ctx);

// The subcommand `noun` of `app`, made when missing ("rentals" holds both the customer's
// verbs and the access verbs).
CLI::App* Noun(CLI::App& app, const std::string& name, const std::string& description);

}  // namespace gpunex::cli
