// The reliability folder as a module of gpunexd (module/module.h): its tables, the
// reliability score, its routes and refresh.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::reliability {

Module ReliabilityModule();

}  // namespace gpunex::platform::reliability
