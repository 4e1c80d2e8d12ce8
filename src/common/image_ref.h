// Docker image references ("registry.example.com:5000/team/model:v2",
// "pytorch/pytorch@sha256:<64 hex>"), parsed by hand after the grammar of
// distribution/reference so that a reference the agent accepts is one the engine accepts,
// and so that a pull names exactly one tag or digest (the Engine API pulls every tag of a
// repository when given a bare name). In common because the agent protocol's
// start_workload parser checks the syntax (agent_protocol.h) and the agent's Docker client
// pulls by the parsed form.
//
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpunex {

// The longest reference accepted, in bytes.
inline constexpr size_t kMaxImageRefLength = 255;

struct ImageRef {
  // Repository with its registry host, as written: "team/model", "host:5000/team/model".
  std::string name;
  // The registry host of `name` with its port, as written ("host:5000"); empty when none
  // is written (Docker Hub).
  std::string domain;
  // "latest" when neither a tag nor a digest is written.
  std::string tag;
  // "sha256:<hex>", or empty. When set, `tag` is empty unless it was written too.
  std::string digest;

  // The reference as the engine understands it: "name:tag", "name@digest" or
  // "name:tag@digest".
  std::string ToString() const;
};

// Parses `ref`; nullopt (and `*error` set, when given) when the syntax is wrong or the
// reference is longer than kMaxImageRefLength.
std::optional<ImageRef> ParseImageRef(std::string_view ref, std::string* error = nullptr);

}  // namespace gpunex
