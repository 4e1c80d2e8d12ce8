#include "platform/store/testing/fault_injection.h"

namespace gpunex::platform::store::testing {

class FaultInjectingDatabase::FaultTx final : public Tx {
 public:
  FaultTx(FaultInjectingDatabase& db, Tx& base) : db_(db), base_(base) {}

  BackendKind Backend() const override { return base_.Backend(); }
  StatusOr<Rows> Query(std::string_view sql, const std::vector<Value>& params) override {
    GPUNEX_RETURN_IF_ERROR(db_.OnStatement(sql, &seen_));
    return base_.Query(sql, params);
  }
  StatusOr<int64_t> Exec(std::string_view sql, const std::vector<Value>& params) override {
    GPUNEX_RETURN_IF_ERROR(db_.OnStatement(sql, &seen_));
    return base_.Exec(sql, params);
  }
  const std::vector<std::string>& seen() const { return seen_; }

 private:
  FaultInjectingDatabase& db_;
  Tx& base_;
  std::vector<std::string> seen_;
};

void FaultInjectingDatabase::FailStatement(std::string fragment, Status status, int times) {
  MutexLock lock(&mu_);
  statement_faults_.push_back({std::move(fragment), std::move(status), times});
}

void FaultInjectingDatabase::FailCommit(std::string fragment, bool committed, int times) {
  MutexLock lock(&mu_);
  commit_faults_.push_back({std::move(fragment), committed, times});
}

void FaultInjectingDatabase::Clear() {
  MutexLock lock(&mu_);
  statement_faults_.clear();
  commit_faults_.clear();
}

int FaultInjectingDatabase::Count(const std::string& fragment) const {
  MutexLock lock(&mu_);
  int n = 0;
  for (const auto& sql : history_) n += sql.find(fragment) != std::string::npos;
  return n;
}

int FaultInjectingDatabase::injected() const {
  MutexLock lock(&mu_);
  return injected_;
}

Status FaultInjectingDatabase::OnStatement(std::string_view sql, std::vector<std::string>* seen) {
  MutexLock lock(&mu_);
  history_.emplace_back(sql);
  seen->emplace_back(sql);
  for (auto it = statement_faults_.begin(); it != statement_faults_.end(); ++it) {
    if (sql.find(it->fragment) == std::string_view::npos) continue;
    Status st = it->status;
    if (--it->times <= 0) statement_faults_.erase(it);
    ++injected_;
    return st;
  }
  return Status::Ok();
}

bool FaultInjectingDatabase::TakeCommitFault(const std::vector<std::string>& seen,
                                             bool* committed) {
  MutexLock lock(&mu_);
  for (auto it = commit_faults_.begin(); it != commit_faults_.end(); ++it) {
    bool ran = false;
    for (const auto& sql : seen) ran = ran || sql.find(it->fragment) != std::string::npos;
    if (!ran) continue;
    *committed = it->committed;
    if (--it->times <= 0) commit_faults_.erase(it);
    ++injected_;
    return true;
  }
  return false;
}

Status FaultInjectingDatabase::Transact(const std::function<Status(Tx&)>& fn) {
  // The callbacks and statements of the attempt that committed (the backend may retry).
  std::vector<std::function<void()>> after_commit;
  bool in_doubt = false;
  bool committed = false;
  const Status rolled_back = Internal("fault injection: the commit was made to fail");
  Status st = base_.Transact([&](Tx& base_tx) -> Status {
    FaultTx tx(*this, base_tx);
    in_doubt = false;
    Status inner = fn(tx);
    if (!inner.ok()) return inner;
    after_commit = tx.TakeAfterCommit();
    in_doubt = TakeCommitFault(tx.seen(), &committed);
    if (in_doubt && !committed) return rolled_back;
    return Status::Ok();
  });
  if (in_doubt && (st.ok() || !committed)) {
    return OutcomeUnknown(std::string("fault injection: the connection was lost during COMMIT (") +
                          (committed ? "it did commit" : "it did not commit") + ")");
  }
  if (st.ok()) RunAfterCommit(std::move(after_commit));
  return st;
}

Status FaultInjectingDatabase::Read(const std::function<Status(Tx&)>& fn) {
  return base_.Read([&](Tx& base_tx) -> Status {
    FaultTx tx(*this, base_tx);
    return fn(tx);
  });
}

}  // namespace gpunex::platform::store::testing
