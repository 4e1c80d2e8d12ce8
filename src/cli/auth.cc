// auth login|status, doctor, version, completion (docs/cli.md).
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"

namespace gpunex::cli {
namespace {

std::string ReadPassword(bool from_stdin) {
  std::string password;
  if (from_stdin || ::isatty(STDIN_FILENO) == 0) {
    std::getline(std::cin, password);
    return password;
  }
  std::cerr << "Password: " << std::flush;
  termios saved{};
  const bool tty = ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  }
  std::getline(std::cin, password);
  if (tty) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  std::cerr << "\n";
  return password;
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string all = path != nullptr ? path : "";
  size_t start = 0;
  while (start <= all.size()) {
    const size_t end = all.find(':', start);
    const std::string dir =
        all.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

const std::vector<Column> kMeColumns = {
    {"ID", "id"},
    {"EMAIL", "email"},
    {"NAME", "name"},
    {"ROLES", "roles", Show::kList},
};

}  // namespace

json::value WithSession(Context& ctx, const std::string& email, bool password_stdin,
                        const std::function<void(Client&, const std::string&)>& use) {
  if (email.empty()) throw CliError(kExitUsage, "--email is required to log in");
  const std::string password = ReadPassword(password_stdin);
  Client anonymous(ClientOptions{ctx.settings().url, "", "", ctx.debug});
  const Response answer =
      anonymous.Send("POST", "/api/v1/auth/login",
                     json::value(json::object{{"email", email}, {"password", password}}));
  if (answer.status == 401) {
    throw CliError(kExitAuth, "log-in refused for " + email + ": wrong email or password");
  }
  anonymous.CheckAnswer(answer, "POST", "/api/v1/auth/login");
  const json::value login = ParseJsonOr(answer.body, nullptr);
  const json::value* token = At(login, "token");
  if (token == nullptr || !token->is_string()) {
    throw CliError(kExitFailure, "the log-in answered no session token");
  }
  Client session(ClientOptions{ctx.settings().url, std::string(token->as_string()),
                               "the session just opened", ctx.debug});
  try {
    use(session, password);
  } catch (...) {
    session.Send("POST", "/api/v1/auth/logout");
    throw;
  }
  session.Send("POST", "/api/v1/auth/logout");
  const json::value* user = At(login, "user");
  return user != nullptr ? *user : json::value(nullptr);
}

void AddAuthCommands(CLI::App& app, Context& ctx) {
  CLI::App* auth = Noun(app, "auth", "sign in and see which key is used");
  CLI::App* login = auth->add_subcommand(
      "login", "log in, make an API key for this client and keep it in the profile");
  struct Login {
    std::string email;
    bool password_stdin = false;
    std::vector<std::string> scopes;
  };
  auto l = std::make_shared<Login>();
  login->add_option("--email", l->email, "your account's email")->required();
  login->add_flag("--password-stdin", l->password_stdin, "read the password from stdin");
  login
      ->add_option("--scopes", l->scopes,
                   "the key's scopes (default: read, write and your provider/admin roles)")
      ->delimiter(',');
  login->callback([l, &ctx] {
    std::string key;
    std::string key_id;
    const json::value user =
        WithSession(ctx, l->email, l->password_stdin, [&](Client& s, const std::string&) {
          json::array scopes;
          if (!l->scopes.empty()) {
            for (const std::string& sc : l->scopes) scopes.emplace_back(sc);
          } else {
            scopes = {"read", "write"};
            const json::value me = s.Call("GET", "/api/v1/me");
            if (const json::value* roles = At(me, "roles"); roles != nullptr && roles->is_array()) {
              for (const json::value& r : roles->as_array()) {
                if (r == "provider" || r == "admin") scopes.push_back(r);
              }
            }
          }
          char host[256] = "this machine";
          ::gethostname(host, sizeof host - 1);
          const json::value made =
              s.Call("POST", "/api/v1/api-keys",
                     json::value(json::object{{"name", std::string("gpunex CLI on ") + host},
                                              {"scopes", std::move(scopes)}}));
          key = std::string(At(made, "key")->as_string());
          key_id = std::string(At(made, "id")->as_string());
        });
    const Settings& s = ctx.settings();
    const Status saved = SaveProfile(s.config_path, s.profile, Profile{s.url, key});
    if (!saved.ok()) {
      throw CliError(kExitFailure, saved.message() + " (the key " + key_id +
                                       " was made; revoke it in the dashboard)");
    }
    ctx.Note("Logged in to " + s.url + " as " + l->email + "; API key " + key_id + " (" +
             KeyHint(key) + ") kept in profile \"" + s.profile + "\" of " + s.config_path);
    if (ctx.format() != Format::kTable) ctx.PrintOne(user, kMeColumns);
  });

  CLI::App* status = auth->add_subcommand("status", "the platform, the key and whose it is");
  status->callback([&ctx] {
    const Settings& s = ctx.settings();
    Client& c = ctx.authed();
    const json::value me = c.Call("GET", "/api/v1/me");
    if (ctx.format() != Format::kTable) {
      ctx.PrintOne(me, kMeColumns);
      return;
    }
    std::cout << "platform:  " << s.url << " (" << SourceName(s.url_source) << ")\n"
              << "profile:   " << s.profile << " (" << s.config_path << ")\n"
              << "api key:   " << KeyHint(s.api_key) << " (" << c.options().key_origin << ")\n"
              << RenderOne(me, kMeColumns, Format::kTable);
  });

  CLI::App* doctor = app.add_subcommand("doctor", "check the config, the platform and the tools");
  doctor->callback([&ctx] {
    int failures = 0;
    const auto check = [&](const std::string& what, bool ok, const std::string& detail) {
      std::cout << (ok ? "ok    " : "FAIL  ") << what << (detail.empty() ? "" : ": " + detail)
                << "\n";
      failures += ok ? 0 : 1;
    };
    const Settings& s = ctx.settings();
    struct stat st {};
    if (::stat(s.config_path.c_str(), &st) == 0) {
      const bool private_mode = (st.st_mode & 077) == 0;
      check("config file " + s.config_path, private_mode,
            private_mode ? "" : "readable by others: chmod 600 it");
    } else {
      check("config file", true, "none (flags and environment only)");
    }
    Client& c = ctx.client();
    bool reachable = false;
    try {
      const Response r = c.Send("GET", "/healthz");
      reachable = r.status == 200;
      check("platform " + s.url, reachable, "HTTP " + std::to_string(r.status));
    } catch (const CliError& e) {
      check("platform " + s.url, false, e.what());
    }
    if (reachable) {
      if (s.api_key.empty()) {
        check("API key", false, "none: gpunex auth login");
      } else {
        const Response r = c.Send("GET", "/api/v1/me");
        const json::value me = ParseJsonOr(r.body, nullptr);
        const json::value* email = At(me, "email");
        check("API key " + KeyHint(s.api_key), r.status == 200,
              r.status != 200 ? "HTTP " + std::to_string(r.status)
              : email != nullptr && email->is_string()
                  ? "signs in as " + std::string(email->as_string())
                  : "");
      }
      const Response g = c.Send("GET", "/api/v1/access/ssh");
      const json::value gate = ParseJsonOr(g.body, nullptr);
      const json::value* on = At(gate, "enabled");
      check("SSH gateway", true,
            on != nullptr && on->is_bool() && on->as_bool() ? "on" : "off on this platform");
    }
    check("ssh (OpenSSH client, for rentals ssh)", OnPath("ssh"),
          OnPath("ssh") ? "" : "not on PATH");
    check("tar (for rentals cp)", OnPath("tar"), OnPath("tar") ? "" : "not on PATH");
    if (failures > 0) throw CliError(kExitFailure, std::to_string(failures) + " check(s) failed");
  });

  CLI::App* version = app.add_subcommand("version", "this client's version, and the platform's");
  version->callback([&ctx] {
    std::cout << "gpunex " << GPUNEX_CLI_VERSION << "\n";
    try {
      const Response r = ctx.client().Send("GET", "/api/v1/openapi.json");
      const json::value* v = At(ParseJsonOr(r.body, nullptr), "info.version");
      if (r.status == 200 && v != nullptr && v->is_string()) {
        std::cout << "platform " << ctx.settings().url << " " << v->as_string() << "\n";
      }
    } catch (const CliError&) {
      // Offline: the client's version is still an answer.
    }
  });
}

}  // namespace gpunex::cli
