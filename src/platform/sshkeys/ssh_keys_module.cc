#include "platform/sshkeys/ssh_keys_module.h"

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
        return Status::Ok();
      },
      .routes = RegisterRoutes,
  };
}

}  // namespace gpunex::platform::sshkeys
