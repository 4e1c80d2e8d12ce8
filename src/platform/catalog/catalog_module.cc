#include "platform/catalog/catalog_module.h"

#include "platform/api/api.h"
#include "platform/catalog/catalog.h"
#include "platform/catalog/catalog_store.h"

namespace gpunex::platform::catalog {

Module CatalogModule() {
  return Module{
      .name = "catalog",
      .migrations = CatalogMigrations,
      .seed = [](store::Database& db) { return SeedBuiltinModels(db); },
      .routes = api::RegisterCatalogRoutes,
  };
}

}  // namespace gpunex::platform::catalog
