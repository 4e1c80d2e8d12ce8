// The modules of gpunexd, in one list (modules.cc): the order is the order their
// migrations take within one schema version, and the order they are built in (a module
// uses the services of those before it), started and scheduled (and stopped in reverse).
// Adding a domain folder adds one line there (docs/architecture.md, "Modules").
#pragma once

#include <vector>

#include "platform/module/module.h"

namespace gpunex::platform {

const std::vector<Module>& Modules();

}  // namespace gpunex::platform
