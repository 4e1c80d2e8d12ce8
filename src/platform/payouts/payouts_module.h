// The payouts folder as a module of gpunexd (module/module.h): its tables, payouts and
// their runs, their routes and ticks.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::payouts {

Module PayoutsModule();

}  // namespace gpunex::platform::payouts
