// `gpunex offers search`: its flags and `--where` expressions turned into the query of
// GET /api/v1/offers, and offers turned into SkyPilot's catalog rows (docs/cli.md,
// docs/integrations.md).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/output.h"
#include "common/json.h"
#include "common/status.h"

namespace gpunex::cli {

using Query = std::vector<std::pair<std::string, std::string>>;

// `'reliability>=90 price<=0.5 gpu=rtx-4090,a100-80gb'`: terms separated by spaces, each
// `key op value`. Keys and the operator each takes: reliability, performance, gpus,
// vram, down, up, cuda (>=); price (<=, USDC per GPU-hour); gpu, region, country, tier,
// verified (=). Fails naming the term that is not understood.
StatusOr<Query> WhereToQuery(std::string_view expression);

// "a=1&b=x%20y" (empty for an empty query), with a leading '?' when not empty.
std::string QueryString(const Query& q);

// SkyPilot's catalog of the offers: for each offer, a row per GPU count 1, 2, 4, 8 ... up
// to its free GPUs: InstanceType ({offer id}_{n}x), AcceleratorName (the GPU's name),
// AcceleratorCount, vCPUs, MemoryGiB, Price (USD an hour for the n GPUs), Region.
json::array SkyPilotRows(const json::array& offers);
const std::vector<Column>& SkyPilotColumns();

}  // namespace gpunex::cli
