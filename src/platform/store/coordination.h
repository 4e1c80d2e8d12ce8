// What instances of one database use to work together without a service of their own:
// a lock that a transaction holds until it ends, and change marks that pollers compare.
//
// Thread-safety: functions over the caller's transaction (a Tx belongs to the thread
// running its callback).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {

// Serialises the transactions that take the same `key`, across every process of the
// database, until the transaction ends. On PostgreSQL a transaction-level advisory lock;
// on SQLite a write transaction holds the whole database already, so nothing is taken.
Status LockUntilCommit(Tx& tx, int64_t key);

// The cells of a row of MAX(...) and COUNT(...) values as one text ("-" for NULL): a mark
// that changes whenever what they summarise does.
std::string MarkOf(const Row& row);

}  // namespace gpunex::platform::store
