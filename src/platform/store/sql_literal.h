// A value of a closed set as an SQL literal, spelt by its table of names (`Name(value)`,
// found beside the enum; plain words, so quotes are all they need), for the queries that
// test a state against a constant: `"... WHERE state = " + SqlLiteral(State::kRunning)`.
#pragma once

#include <string>

namespace gpunex::platform::store {

template <typename E>
std::string SqlLiteral(E value) {
  return "'" + std::string(Name(value)) + "'";
}

}  // namespace gpunex::platform::store
