// The idempotency folder as a module of gpunexd (module/module.h): its tables and the sweep
// of expired keys (the API's guard uses the service).
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::idempotency {

Module IdempotencyModule();

}  // namespace gpunex::platform::idempotency
