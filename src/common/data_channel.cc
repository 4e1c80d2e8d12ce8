#include "common/data_channel.h"

#include "common/agent_protocol.h"
#include "common/json.h"
#include "common/mux.h"

namespace gpunex {

std::string EncodeStreamTarget(const StreamTarget& target) {
  return ToJsonText(
      json::object{{"kind", "port"}, {"workload_id", target.workload_id}, {"port", target.port}});
}

StatusOr<StreamTarget> ParseStreamTarget(std::string_view payload) {
  if (payload.size() > mux::kMaxTargetBytes) return InvalidArgument("the target is too long");
  auto parsed = ParseJson(payload);
  if (!parsed.ok() || !parsed->is_object()) {
    return InvalidArgument("the target is not a JSON object");
  }
  FieldErrors errors;
  JsonReader r(parsed->get_object(), "", &errors);
  r.RejectUnknown({"kind", "workload_id", "port"});
  StreamTarget t;
  if (auto kind = r.String("kind", true, 16); kind && *kind != "port") {
    r.Fail("kind", "must be \"port\"");
  }
  if (auto id = r.String("workload_id", true, 64)) {
    if (protocol::IsWorkloadId(*id)) {
      t.workload_id = *id;
    } else {
      r.Fail("workload_id", "is not a workload id");
    }
  }
  if (auto port = r.Int("port", true, 1, 65535)) t.port = static_cast<uint16_t>(*port);
  if (!errors.empty()) {
    return InvalidArgument("bad target: " + errors.begin()->first + " " + errors.begin()->second);
  }
  return t;
}

}  // namespace gpunex
