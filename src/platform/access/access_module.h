// The access folder as a module of gpunexd (module/module.h): the [access] table, the
// access tokens' table and routes, and the Access service, whose Gate gpunexd's main
// serves on the access listener (docs/access.md).
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::access {

Module AccessModule();

// /api/v1/rentals/{id}/access-tokens (access_api.cc).
void RegisterRoutes(http::Router& router, const api::ApiContext& ctx);

}  // namespace gpunex::platform::access
