// The topups folder as a module of gpunexd (module/module.h): its tables, customers' USDC
// top-ups, their routes and the chain watcher.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::topups {

Module TopupsModule();

}  // namespace gpunex::platform::topups
