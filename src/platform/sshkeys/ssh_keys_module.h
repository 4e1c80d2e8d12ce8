// The sshkeys folder as a module of gpunexd (module/module.h): its table, its
// configuration table [ssh_keys], customers' SSH keys and their routes. The smallest
// module: it shows what a new domain folder declares (docs/architecture.md, "Modules").
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::api {
struct ApiContext;
}  // namespace gpunex::platform::api

namespace gpunex::platform::sshkeys {

Module SshKeysModule();

// GET, POST /api/v1/me/ssh-keys and DELETE /api/v1/me/ssh-keys/{id} (ssh_keys_api.cc).
void RegisterRoutes(http::Router& router, const api::ApiContext& ctx);

}  // namespace gpunex::platform::sshkeys
