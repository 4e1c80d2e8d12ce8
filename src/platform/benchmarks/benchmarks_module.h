// The benchmarks folder as a module of gpunexd (module/module.h): its tables, the benchmark
// scheduler, its routes and ticks.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::benchmarks {

Module BenchmarksModule();

}  // namespace gpunex::platform::benchmarks
