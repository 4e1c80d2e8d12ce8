// The notify folder as a module of gpunexd (module/module.h): its tables, the email outbox
// and its sender (with an SMTP URL), and the notification routes.
#pragma once

#include "platform/module/module.h"

namespace gpunex::platform::notify {

Module NotifyModule();

}  // namespace gpunex::platform::notify
