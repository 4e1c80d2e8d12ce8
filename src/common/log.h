// Structured logs: one JSON object per line on stderr,
//   {"ts":"2026-11-29T16:00:00.000Z","level":"info","event":"http.request", ...fields}
// Thread-safe.
#pragma once

#include <string_view>

#include "common/json.h"

namespace gpunex {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

void SetLogLevel(LogLevel level);
// Parses "debug", "info", "warn", "error"; false when unknown.
bool ParseLogLevel(std::string_view s, LogLevel* out);
void Log(LogLevel level, std::string_view event, json::object fields = {});

inline void LogInfo(std::string_view event, json::object fields = {}) {
  Log(LogLevel::kInfo, event, std::move(fields));
}
inline void LogWarn(std::string_view event, json::object fields = {}) {
  Log(LogLevel::kWarn, event, std::move(fields));
}
inline void LogError(std::string_view event, json::object fields = {}) {
  Log(LogLevel::kError, event, std::move(fields));
}

}  // namespace gpunex
