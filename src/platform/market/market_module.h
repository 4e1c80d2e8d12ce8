// The market folder as a module of gpunexd (module/module.h): its tables, the offer index,
// the marketplace routes and the index's polling.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::market {

Module MarketModule();

}  // namespace gpunex::platform::market
