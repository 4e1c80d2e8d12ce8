// A value of a closed set as an SQL literal, spelt by its table of names (`Name(value)`,
// found beside the enum; plain words, so quotes are all they need), for the queries that
// test a state against a constant: `"... WHERE state = " + SqlLiteral(State::kRunning)`;
// and the placeholders of an IN list.
#pragma once

#include <string>

namespace gpunex::platform::store {

template <typename E>
std::string SqlLiteral(E value) {
  return "'" + std::string(Name(value)) + "'";
}

// "?, ?, ?" for n = 3: `"... WHERE id IN (" + InList(ids.size()) + ")"` (n > 0).
inline std::string InList(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += i ? ", ?" : "?";
  return s;
}

}  // namespace gpunex::platform::store
