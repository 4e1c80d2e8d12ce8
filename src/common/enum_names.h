// A closed set of values is an enum class with one table of names, the only place its
// values are spelt for the wire (JSON), the database and logs, so that a misspelt value
// cannot compile:
//
//   enum class RentalState { kPending, kStarting, kRunning, kEnding, kEnded };
//   inline constexpr EnumNames<RentalState, 5> kRentalStateNames{{{
//       {RentalState::kPending, "pending"}, ...}}};
//   kRentalStateNames.Name(RentalState::kRunning)  // "running"
//   kRentalStateNames.Parse("running")             // RentalState::kRunning; nullopt otherwise
//
// Thread-safety: constant data.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace gpunex {

template <typename E, size_t N>
struct EnumNames {
  std::array<std::pair<E, std::string_view>, N> entries;

  // REQUIRES: `value` is in the table (every enumerator is).
  constexpr std::string_view Name(E value) const {
    for (const auto& [v, name] : entries) {
      if (v == value) return name;
    }
    return "unknown";
  }
  constexpr std::optional<E> Parse(std::string_view name) const {
    for (const auto& [v, n] : entries) {
      if (n == name) return v;
    }
    return std::nullopt;
  }
  // The names as a field error lists what a value must be, in the table's order:
  // "\"solana\", \"sepa\" or \"ach\"".
  std::string Listed() const {
    std::string out;
    for (size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += '"';
      out += entries[i].second;
      out += '"';
    }
    return out;
  }
  // For values read back from storage, which only this table wrote: anything else is
  // corruption, reported as std::invalid_argument (the store's row decoding turns it
  // into kInternal naming the column).
  E ParseStored(std::string_view name) const {
    if (auto v = Parse(name)) return *v;
    throw std::invalid_argument("unknown value \"" + std::string(name) + "\"");
  }
};

}  // namespace gpunex
