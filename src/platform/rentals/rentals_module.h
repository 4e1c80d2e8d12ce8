// The rentals folder as a module of gpunexd (module/module.h): its tables, rentals and
// jobs, their routes, the meter and the job scheduler.
#pragma once

#include "platform/module/module.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::rentals {

Module RentalsModule();

// The [rentals] table (Config::Section<RentalsSettings>("rentals")): the options of
// Rentals and of Jobs, without what the module fills in when it builds them.
struct RentalsSettings {
  RentalsOptions rentals;
  JobsOptions jobs;
};

}  // namespace gpunex::platform::rentals
