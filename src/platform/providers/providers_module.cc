#include "platform/providers/providers_module.h"

#include <chrono>
#include <memory>

#include "common/background.h"
#include "platform/api/api.h"
#include "platform/fleet/fleet.h"
#include "platform/providers/providers.h"
#include "platform/providers/providers_store.h"

namespace gpunex::platform::providers {

namespace {

// How far back each pass looks for revocations: a revocation committed by another instance
// becomes visible here some time after the moment it records (its clock, its commit), and
// closing the sessions of a token twice does nothing.
constexpr auto kRevocationOverlap = std::chrono::seconds(60);

// An agent token revoked or rotated on any instance ends this instance's connections of
// it within a second (the instance that took the request closes its own at once). A
// token's agent cannot connect again anywhere: every connection checks its token.
class RevocationWatch {
 public:
  RevocationWatch(store::Database& db, const Clock& clock)
      : db_(db), clock_(clock), since_(clock.Now()) {}

  // Only where several instances share the database: one process serves a SQLite one.
  bool Needed() const { return db_.Backend() == store::BackendKind::kPostgres; }

  Status Pass(fleet::Fleet& fleet) {
    const Timestamp now = clock_.Now();
    std::vector<std::string> revoked;
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(revoked,
                              ProvidersStore(tx).TokensRevokedSince(since_ - kRevocationOverlap));
      return Status::Ok();
    }));
    for (const std::string& id : revoked) fleet.CloseSessionsForToken(id);
    since_ = now;
    return Status::Ok();
  }

 private:
  store::Database& db_;
  const Clock& clock_;
  Timestamp since_;  // the start of the last pass (one task thread: no lock)
};

}  // namespace

Module ProvidersModule() {
  return Module{
      .name = "providers",
      .migrations = ProvidersMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(std::make_unique<Providers>(env.db, ProvidersOptions{&env.clock}));
        env.services.Own(std::make_unique<RevocationWatch>(env.db, env.clock));
        return Status::Ok();
      },
      .routes = api::RegisterProviderRoutes,
      .schedule =
          [](Services& services, const Config&, Background& background) {
            auto* fleet = services.Find<fleet::Fleet>();
            RevocationWatch& watch = services.Get<RevocationWatch>();
            if (fleet == nullptr || !watch.Needed()) return;  // no agents, or no other instance
            background.Add({.name = "providers.revocations",
                            .every = std::chrono::seconds(1),
                            .pass = [&watch, fleet] { return watch.Pass(*fleet); }});
          },
  };
}

}  // namespace gpunex::platform::providers
