#include "cli/commands.h"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

namespace gpunex::cli {

Context::Context() = default;

const Settings& Context::settings() {
  if (!settings_) {
    StatusOr<std::string> path = ConfigPath(env);
    if (!path.ok()) throw CliError(kExitUsage, path.status().message());
    StatusOr<ConfigFile> file = LoadConfig(*path);
    if (!file.ok()) throw CliError(kExitUsage, file.status().message());
    StatusOr<Settings> s = Resolve(flags, env, *file, *path);
    if (!s.ok()) throw CliError(kExitUsage, s.status().message());
    settings_ = std::move(*s);
  }
  return *settings_;
}

Client& Context::client() {
  if (!client_) {
    const Settings& s = settings();
    std::string origin(SourceName(s.api_key_source));
    if (s.api_key_source == Source::kProfile) origin = "profile " + s.profile;
    if (s.api_key_source == Source::kEnvironment) origin = "GPUNEX_API_KEY";
    if (s.api_key_source == Source::kFlag) origin = "--api-key";
    client_ = std::make_unique<Client>(ClientOptions{s.url, s.api_key, origin, debug});
  }
  return *client_;
}

Client& Context::authed() {
  Client& c = client();
  if (c.options().api_key.empty()) {
    throw CliError(kExitAuth,
                   "no API key: run `gpunex auth login`, or set GPUNEX_API_KEY or --api-key");
  }
  return c;
}

Format Context::format() {
  if (quiet) return Format::kQuiet;
  if (output.empty()) return Format::kTable;
  StatusOr<Format> f = ParseFormat(output);
  if (!f.ok()) throw CliError(kExitUsage, f.status().message());
  return *f;
}

bool Context::color() const {
  const auto no_color = env("NO_COLOR");
  return ::isatty(STDOUT_FILENO) != 0 && !(no_color && !no_color->empty());
}

bool Context::progress() const { return ::isatty(STDERR_FILENO) != 0; }

void Context::PrintList(const json::array& items, const std::vector<Column>& columns) {
  std::cout << RenderList(items, columns, format(), color()) << std::flush;
}

void Context::PrintOne(const json::value& item, const std::vector<Column>& columns) {
  std::cout << RenderOne(item, columns, format()) << std::flush;
}

void Context::Note(const std::string& text) const { std::cerr << text << "\n"; }

std::string PathOf(std::string_view pattern, std::initializer_list<std::string_view> ids) {
  std::string out;
  auto id = ids.begin();
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{' && i + 1 < pattern.size() && pattern[i + 1] == '}' && id != ids.end()) {
      out += UrlEncode(*id++);
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

json::array FetchItems(Client& client, const std::string& target, int page, int limit) {
  json::array items;
  std::string cursor;
  const char sep = target.find('?') == std::string::npos ? '?' : '&';
  for (;;) {
    std::string t = target;
    if (page > 0) {
      int size = page;
      if (limit > 0) size = std::min<int>(page, limit - static_cast<int>(items.size()));
      t += sep + std::string("limit=") + std::to_string(size);
      if (!cursor.empty()) t += "&cursor=" + UrlEncode(cursor);
    }
    json::value answer = client.Call("GET", t);
    if (!answer.is_object()) throw CliError(kExitFailure, "GET " + target + ": not a list");
    json::object& o = answer.as_object();
    if (json::value* list = o.if_contains("items"); list != nullptr && list->is_array()) {
      for (json::value& item : list->as_array()) {
        if (limit > 0 && static_cast<int>(items.size()) >= limit) break;
        items.push_back(std::move(item));
      }
    }
    const json::value* next = o.if_contains("next_cursor");
    if (page == 0 || next == nullptr || !next->is_string() || next->as_string().empty()) break;
    if (limit > 0 && static_cast<int>(items.size()) >= limit) break;
    cursor = std::string(next->as_string());
  }
  return items;
}

void Nap(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

CLI::App* Noun(CLI::App& app, const std::string& name, const std::string& description) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == name) return sub;
  }
  CLI::App* sub = app.add_subcommand(name, description);
  sub->require_subcommand(1);
  return sub;
}

}  // namespace gpunex::cli
