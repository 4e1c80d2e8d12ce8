#include "common/invariant.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/log.h"

namespace gpunex {

Status InvariantBroken(std::string_view condition, std::string_view what, std::string_view file,
                       int line) {
  const std::string where = std::string(file) + ":" + std::to_string(line);
  LogError("invariant.broken", {{"condition", condition}, {"what", what}, {"where", where}});
#ifndef NDEBUG
  std::fprintf(stderr, "invariant broken at %s: %.*s (%.*s)\n", where.c_str(),
               static_cast<int>(condition.size()), condition.data(), static_cast<int>(what.size()),
               what.data());
  std::abort();
#endif
  return Internal("an internal check failed (" + std::string(what) + ")");
}

}  // namespace gpunex
