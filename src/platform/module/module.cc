#include "platform/module/module.h"

#include <cstdlib>
#include <iostream>

#include "common/log.h"

namespace gpunex::platform {

Services::~Services() {
  // The reverse of the order they were built: a service outlives those that use it.
  while (!owned_.empty()) owned_.pop_back();
}

void Services::Put(const std::type_info& type, void* service) { services_[type] = service; }

void Services::Missing(const std::type_info& type) {
  LogError("modules.missing_service", {{"type", type.name()}});
  std::cerr << "gpunexd: no module offers the service " << type.name()
            << " before the module that needs it (modules.cc is out of order)\n";
  std::abort();
}

std::vector<store::Migration> MigrationsOf(const std::vector<Module>& modules) {
  std::vector<store::Migration> all;
  for (const Module& m : modules) {
    if (!m.migrations) continue;
    for (store::Migration& part : m.migrations()) all.push_back(std::move(part));
  }
  return all;
}

std::vector<ConfigSection> ConfigSectionsOf(const std::vector<Module>& modules) {
  std::vector<ConfigSection> sections;
  for (const Module& m : modules) {
    if (m.config) sections.push_back(*m.config);
  }
  return sections;
}

}  // namespace gpunex::platform
