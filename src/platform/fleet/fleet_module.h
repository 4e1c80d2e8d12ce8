// The fleet folder as a module of gpunexd (module/module.h): its tables, machines, agents
// and workloads, their routes and sweep.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::fleet {

Module FleetModule();

}  // namespace gpunex::platform::fleet
