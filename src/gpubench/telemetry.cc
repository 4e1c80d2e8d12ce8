#include "gpubench/telemetry.h"

namespace gpunex::gpubench {

Telemetry::~Telemetry() = default;

}  // namespace gpunex::gpubench
