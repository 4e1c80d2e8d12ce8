// The pricing folder as a module of gpunexd (module/module.h): its tables, providers'
// prices, and their routes.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::pricing {

Module PricingModule();

}  // namespace gpunex::platform::pricing
