// The catalog folder as a module of gpunexd (module/module.h): its tables with the built-in
// GPU models, and the catalog routes.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::catalog {

Module CatalogModule();

}  // namespace gpunex::platform::catalog
