#include "platform/sshkeys/ssh_keys_module.h"

#include "common/agent_protocol.h"
#include "platform/rentals/rentals.h"
#include "platform/sshkeys/ssh_keys.h"
#include "platform/sshkeys/ssh_keys_store.h"

namespace gpunex::platform::sshkeys {

namespace {

ConfigSection Section() {
  return ConfigSection{
      .name = "ssh_keys",
      .parse = [](ConfigTable& t, const EnvGetter&) -> StatusOr<std::any> {
        SshKeysOptions o;
        GPUNEX_RETURN_IF_ERROR(t.Int("max_per_account", &o.max_per_account, 1, 1000));
        return std::any(o);
      },
      .example =
          R"([ssh_keys]                       # customers' SSH public keys (/api/v1/me/ssh-keys)
max_per_account = 50             # the keys one account may hold
)"};
}

}  // namespace

Module SshKeysModule() {
  return Module{
      .name = "sshkeys",
      .migrations = SshKeysMigrations,
      .config = Section(),
      .build = [](ModuleEnv& env) -> Status {
        SshKeysOptions o = env.config.Section<SshKeysOptions>("ssh_keys");
        o.clock = &env.clock;
        env.services.Own(std::make_unique<SshKeys>(env.db, o));
        // A rental's container gets its customer's keys as PUBLIC_KEY.
        env.services.Get<rentals::Rentals>().AddContainerEnv(
            [](store::Tx& tx, const std::string& customer_id)
                -> StatusOr<std::vector<std::pair<std::string, std::string>>> {
              GPUNEX_ASSIGN_OR_RETURN(std::string keys,
                                      PublicKeyEnv(tx, customer_id, protocol::kMaxEnvValueLength));
              if (keys.empty()) return std::vector<std::pair<std::string, std::string>>{};
              return std::vector<std::pair<std::string, std::string>>{{"PUBLIC_KEY", keys}};
            });
        return Status::Ok();
      },
      .routes = RegisterRoutes,
  };
}

}  // namespace gpunex::platform::sshkeys
