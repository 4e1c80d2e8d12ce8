// The rentals folder as a module of gpunexd (module/module.h): its tables, rentals and
// jobs, their routes, the meter and the job scheduler.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::rentals {

Module RentalsModule();

}  // namespace gpunex::platform::rentals
