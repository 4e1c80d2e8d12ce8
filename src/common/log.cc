#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>

#include "common/time.h"

namespace gpunex {
namespace {

std::atomic<LogLevel> g_level{LogLevel::kInfo};

spdlog::logger& Logger() {
  static auto logger = [] {
    auto l = spdlog::stderr_logger_mt("gpunex");
    l->set_pattern("%v");
    l->flush_on(spdlog::level::info);
    return l;
  }();
  return *logger;
}

const char* Name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (s == Name(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, std::string_view event, json::object fields) {
  if (level < g_level.load()) return;
  json::object line;
  line["ts"] = FormatRfc3339(SystemClock().Now());
  line["level"] = Name(level);
  line["event"] = event;
  for (auto& kv : fields) line[kv.key()] = std::move(kv.value());
  Logger().info(json::serialize(line));
}

}  // namespace gpunex
