// FaultInjectingDatabase: a Database that forwards to another and makes chosen statements
// or commits fail, so that tests exercise the paths a real database takes rarely: a
// conflict that makes the transaction retry (kAborted), a database that went away
// (kUnavailable), and a commit whose outcome is unknown (kOutcomeUnknown), both when it
// did commit and when it did not. The idea is leveldb's EnvWrapper.
//
// Faults are chosen by a fragment of SQL ("INSERT INTO agent_commands"): the point in the
// code is the statement it runs. A statement failure is returned by Tx::Query/Exec
// without running the statement; the backend below then behaves as it would for a real
// failure of that kind (kAborted: the whole callback runs again).
//
// Thread-safety: safe to share, like the Database it wraps.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "platform/store/db.h"

namespace gpunex::platform::store::testing {

class FaultInjectingDatabase final : public Database {
 public:
  // `base` must outlive this.
  explicit FaultInjectingDatabase(Database& base) : base_(base) {}

  // The next `times` statements whose SQL contains `fragment` fail with `status`.
  void FailStatement(std::string fragment, Status status, int times = 1) EXCLUDES(mu_);
  // The next `times` Transact calls that ran a statement containing `fragment` return
  // kOutcomeUnknown. With `committed` the transaction did commit (its writes are durable
  // and visible); without, it was rolled back. Either way its AfterCommit callbacks do
  // not run, as when a connection is lost during COMMIT.
  void FailCommit(std::string fragment, bool committed, int times = 1) EXCLUDES(mu_);
  // Forgets the faults not yet used.
  void Clear() EXCLUDES(mu_);

  // How many statements containing `fragment` were attempted since construction
  // (including failed ones).
  int Count(const std::string& fragment) const EXCLUDES(mu_);
  // How many faults were injected.
  int injected() const EXCLUDES(mu_);

  BackendKind Backend() const override { return base_.Backend(); }
  Status Transact(const std::function<Status(Tx&)>& fn) override;
  Status Read(const std::function<Status(Tx&)>& fn) override;
  Status Ping() override { return base_.Ping(); }
  StatusOr<std::unique_ptr<Lock>> TryLock(std::string_view name) override {
    return base_.TryLock(name);
  }

 private:
  class FaultTx;
  struct StatementFault {
    std::string fragment;
    Status status;
    int times;
  };
  struct CommitFault {
    std::string fragment;
    bool committed;
    int times;
  };

  // The fault for a statement about to run, or OK; counts the statement.
  Status OnStatement(std::string_view sql, std::vector<std::string>* seen) EXCLUDES(mu_);
  // Whether a transaction that ran `seen` ends in an unknown outcome; sets `committed`.
  bool TakeCommitFault(const std::vector<std::string>& seen, bool* committed) EXCLUDES(mu_);

  Database& base_;
  mutable Mutex mu_;
  std::vector<StatementFault> statement_faults_ GUARDED_BY(mu_);
  std::vector<CommitFault> commit_faults_ GUARDED_BY(mu_);
  std::vector<std::string> history_ GUARDED_BY(mu_);  // every statement attempted
  int injected_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpunex::platform::store::testing
