// Private to the agent protocol's parsers (agent_protocol.cc, agent_protocol_payloads.cc):
// the small readers every message and payload parser shares.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace gpunex::protocol::internal {

constexpr size_t kShort = 256;

inline Status Finish(FieldErrors& errors) {
  if (errors.empty()) return Status::Ok();
  return Status(StatusCode::kValidationFailed, "the message has invalid fields", std::move(errors));
}

inline std::string Str(const JsonReader& r, std::string_view key, bool required,
                       size_t max = kShort) {
  return r.String(key, required, max).value_or("");
}

inline int64_t Int(const JsonReader& r, std::string_view key, int64_t min, int64_t max,
                   bool required = true) {
  return r.Int(key, required, min, max).value_or(0);
}

template <typename T, typename F>
std::vector<T> List(const JsonReader& r, std::string_view key, size_t max, F parse_one) {
  std::vector<T> out;
  const json::array* a = r.Array(key, true, 0, max);
  if (!a) return out;
  for (size_t i = 0; i < a->size(); ++i) {
    std::string path = r.PathOf(key) + "[" + std::to_string(i) + "]";
    if (!(*a)[i].is_object()) {
      r.errors()->emplace(path, "must be an object");
      continue;
    }
    JsonReader e((*a)[i].get_object(), path, r.errors());
    out.push_back(parse_one(e));
  }
  return out;
}

}  // namespace gpunex::protocol::internal
