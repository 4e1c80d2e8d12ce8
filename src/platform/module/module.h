// A domain folder as a module of gpunexd: what it adds to the platform, declared in one
// place by the folder itself (its module.cc) and registered in one list (modules.cc).
// gpunexd walks that list to migrate the schema, read the configuration, build the
// services, route the API, schedule the background work and collect metrics, so that a
// new folder plugs in without editing any of those (docs/architecture.md, "Modules").
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "common/background.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/config/config.h"
#include "platform/store/migrations.h"

namespace gpunex::platform {

namespace http {
class Router;
class Metrics;
}  // namespace http
namespace api {
struct ApiContext;
}  // namespace api
namespace store {
class Database;
}  // namespace store

// The services the modules have built, found by type: a module asks for the services of
// the modules before it in the list (its dependencies) and offers its own. Those it
// owns are destroyed in the reverse order they were added.
class Services {
 public:
  Services() = default;
  Services(const Services&) = delete;
  Services& operator=(const Services&) = delete;
  ~Services();

  // Offers `service`, which outlives this registry, as the T of the platform.
  template <typename T>
  void Provide(T& service) {
    Put(typeid(T), &service);
  }
  // Keeps `service` for the platform's lifetime and offers it as the T.
  template <typename T>
  T& Own(std::unique_ptr<T> service) {
    T& s = *service;
    Put(typeid(T), &s);
    owned_.push_back(std::shared_ptr<void>(std::move(service)));
    return s;
  }
  // The T, or null when no module offered one (an optional service).
  template <typename T>
  T* Find() const {
    auto it = services_.find(typeid(T));
    return it == services_.end() ? nullptr : static_cast<T*>(it->second);
  }
  // The T. REQUIRES: a module before the caller offered it; otherwise the module list is
  // out of order, and the process stops naming the type (every start-up shows it).
  template <typename T>
  T& Get() const {
    T* s = Find<T>();
    if (!s) Missing(typeid(T));
    return *s;
  }

 private:
  void Put(const std::type_info& type, void* service);
  [[noreturn]] static void Missing(const std::type_info& type);

  std::unordered_map<std::type_index, void*> services_;
  std::vector<std::shared_ptr<void>> owned_;
};

// What a module's build step is given.
struct ModuleEnv {
  const Config& config;
  store::Database& db;
  const Clock& clock;
  Services& services;
};

// One domain folder's parts. Every part is optional.
struct Module {
  // The folder's name: "topups", the owner of its migrations.
  std::string name;
  // Its tables: the migrations of the folder's store, in the order of the list within
  // one version (schema.cc).
  std::function<std::vector<store::Migration>()> migrations = nullptr;
  // Data the folder needs in every database, written after the migrations (idempotent).
  std::function<Status(store::Database&)> seed = nullptr;
  // Its configuration table [name] (config.h, ConfigSection): parsed and checked by the
  // folder, its documentation written into deploy/gpunexd.example.toml (a test checks).
  std::optional<ConfigSection> config = std::nullopt;
  // Builds the folder's services from the configuration and the services of the modules
  // before it, and offers them in env.services.
  std::function<Status(ModuleEnv& env)> build = nullptr;
  // After every module is built, before anything is served: work that needs the whole
  // platform (the offer index loads the listings).
  std::function<Status(Services& services)> start = nullptr;
  // Its routes, with the access each declares (api.h). Handlers reach the folder's
  // services through ctx.services.
  std::function<void(http::Router& router, const api::ApiContext& ctx)> routes = nullptr;
  // Its background work (common/background.h).
  std::function<void(Services& services, const Config& config, Background& background)> schedule =
      nullptr;
  // Refreshes its figures before /metrics renders.
  std::function<void(const Services& services, http::Metrics& metrics)> metrics = nullptr;
};

// Module::schedule for a module whose service T schedules itself (T::ScheduleOn).
template <typename T>
void ScheduleService(Services& services, const Config&, Background& background) {
  services.Get<T>().ScheduleOn(background);
}

// Every module's migrations, in the order of `modules`.
std::vector<store::Migration> MigrationsOf(const std::vector<Module>& modules);
// Every module's configuration table, in the order of `modules`.
std::vector<ConfigSection> ConfigSectionsOf(const std::vector<Module>& modules);

}  // namespace gpunex::platform
