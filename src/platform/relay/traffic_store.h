// The bytes each rental's ports moved through the relay (issue 25, docs/access.md), kept
// in the table rental_traffic: added to by the relay's meter (RelayOptions::meter) every
// few seconds, read for the rental (its `traffic`). The rows outlive the instance that
// relayed the bytes, and add up over every instance of a cluster.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "platform/relay/relay.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::relay {

// Adds `traffic` to the rentals' rows (made on first use). In the caller's transaction.
Status AddTraffic(store::Tx& tx, const std::vector<PortTraffic>& traffic);

// The rental's rows, by port; none before a byte moved.
StatusOr<std::vector<PortTraffic>> TrafficOf(store::Tx& tx, const std::string& rental_id);

std::vector<store::Migration> TrafficMigrations();

}  // namespace gpunex::platform::relay
