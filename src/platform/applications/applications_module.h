// The applications folder as a module of gpunexd (module/module.h): its tables, provider
// applications and their review, and their routes.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::applications {

Module ApplicationsModule();

}  // namespace gpunex::platform::applications
