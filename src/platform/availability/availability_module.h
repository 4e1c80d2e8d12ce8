// The availability folder as a module of gpunexd (module/module.h): its tables, schedules
// and maintenance windows, their routes and ticks.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::availability {

Module AvailabilityModule();

}  // namespace gpunex::platform::availability
