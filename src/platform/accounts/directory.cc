#include "platform/accounts/directory.h"

#include <utility>

#include "common/ascii.h"
#include "platform/accounts/accounts_store.h"

namespace gpunex::platform::accounts {

namespace {

UserSummary SummaryOf(UserRow&& r) {
  return UserSummary{.id = std::move(r.id),
                     .email = std::move(r.email),
                     .name = std::move(r.name),
                     .created_at = r.created_at,
                     .disabled = r.disabled};
}

}  // namespace

StatusOr<std::optional<std::string>> AccountEmail(store::Tx& tx, const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> row, AccountsStore(tx).FindUser(user_id));
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(std::move(row->email));
}

StatusOr<std::map<std::string, std::string>> UserNames(store::Tx& tx,
                                                       const std::vector<std::string>& ids) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<UserRow> rows, AccountsStore(tx).UsersOf(ids));
  std::map<std::string, std::string> out;
  for (UserRow& r : rows) out[r.id] = std::move(r.name);
  return out;
}

StatusOr<std::map<std::string, UserSummary>> UserSummaries(store::Tx& tx,
                                                           const std::vector<std::string>& ids) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<UserRow> rows, AccountsStore(tx).UsersOf(ids));
  std::map<std::string, UserSummary> out;
  for (UserRow& r : rows) {
    std::string id = r.id;
    out.emplace(std::move(id), SummaryOf(std::move(r)));
  }
  return out;
}

StatusOr<std::vector<UserSummary>> SearchUsers(store::Tx& tx, std::string_view text, int limit) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<UserRow> rows,
                          AccountsStore(tx).SearchUsers(AsciiLower(text), limit));
  std::vector<UserSummary> out;
  for (UserRow& r : rows) out.push_back(SummaryOf(std::move(r)));
  return out;
}

StatusOr<std::optional<UserDetail>> FindUserDetail(store::Tx& tx, const std::string& user_id) {
  AccountsStore store(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> row, store.FindUser(user_id));
  if (!row) return std::optional<UserDetail>();
  UserDetail out;
  GPUNEX_ASSIGN_OR_RETURN(out.roles, store.RolesOf(user_id));
  out.summary = SummaryOf(std::move(*row));
  return std::optional<UserDetail>(std::move(out));
}

StatusOr<std::optional<std::string>> UserIdByEmail(store::Tx& tx, std::string_view email) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> row,
                          AccountsStore(tx).FindUserByEmail(AsciiLower(email)));
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(std::move(row->id));
}

}  // namespace gpunex::platform::accounts
