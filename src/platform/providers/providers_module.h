// The providers folder as a module of gpunexd (module/module.h): its tables, providers and
// their agent tokens, and their routes.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::providers {

Module ProvidersModule();

}  // namespace gpunex::platform::providers
