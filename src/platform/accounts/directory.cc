#include "platform/accounts/directory.h"

#include <utility>

#include "platform/accounts/accounts_store.h"

namespace gpunex::platform::accounts {

StatusOr<std::optional<std::string>> AccountEmail(store::Tx& tx, const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<UserRow> row, AccountsStore(tx).FindUser(user_id));
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(std::move(row->email));
}

StatusOr<std::map<std::string, std::string>> UserNames(store::Tx& tx,
                                                       const std::vector<std::string>& ids) {
  return AccountsStore(tx).NamesOf(ids);
}

}  // namespace gpunex::platform::accounts
