// The billing folder as a module of gpunexd (module/module.h): its tables and the ledger.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::billing {

Module BillingModule();

}  // namespace gpunex::platform::billing
