#ifndef GPUNEX_COMMON_INVARIANT_H_
#define GPUNEX_COMMON_INVARIANT_H_

// Invariants: what must hold whatever the input, where money and state machines move
// (the parts of a metered total add up to it, a ledger batch moves as much out as in, a
// rental's state changes only to a state it may go to). Inputs are validated before
// (errors that name the field); a broken invariant is a bug of ours.
//
// GPUNEX_INVARIANT(condition, what) in a function that returns Status or StatusOr: when
// the condition is false, debug and sanitizer builds stop the process with the condition,
// `what` and the place (so that a test finds the bug where it happens); release builds
// log "invariant.broken" with the same and return kInternal, so that the transaction
// that would have broken it rolls back and the process goes on serving.

#include <string_view>

#include "common/status.h"

namespace gpunex {

// Logs the broken invariant; stops the process unless NDEBUG is defined; returns the
// kInternal status to give back otherwise.
Status InvariantBroken(std::string_view condition, std::string_view what, std::string_view file,
                       int line);

}  // namespace gpunex

#define GPUNEX_INVARIANT(condition, what)                                                       \
  do {                                                                                          \
    if (!(condition)) return ::gpunex::InvariantBroken(#condition, (what), __FILE__, __LINE__); \
  } while (false)

#endif  // GPUNEX_COMMON_INVARIANT_H_
