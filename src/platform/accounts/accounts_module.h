// The accounts folder as a module of gpunexd (module/module.h): its tables, the accounts
// and the email verifier they use, and the routes of signing up, logging in, sessions and
// API keys.
#pragma once

#include "platform/accounts/accounts.h"
#include "platform/module/module.h"

namespace gpunex::platform::accounts {

Module AccountsModule();

// The accounts' options from the configuration (also for `gpunexd admin create`).
AccountsOptions AccountsOptionsFrom(const Config& c);

}  // namespace gpunex::platform::accounts
