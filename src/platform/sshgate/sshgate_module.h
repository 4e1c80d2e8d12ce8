// The sshgate folder as a module of gpunexd (module/module.h): the SSH gateway
// (gateway.h) when [access] ssh_listen is set, its host key's table, its figures in
// /metrics, and GET /api/v1/access/ssh, where customers and the dashboard learn where to
// connect and which host key to expect (docs/access.md, "SSH").
#pragma once

#include <cstdint>
#include <string>

#include "platform/module/module.h"
#include "platform/sshgate/host_key.h"

namespace gpunex::platform::sshgate {

Module SshGateModule();

// Where customers reach the gateway: host and port as they type them.
struct SshEndpoint {
  std::string host;
  uint16_t port = 0;
  HostKey host_key;
};

// "host:port" of `public_address` when it names both; else the host of `public_address`
// (or, when it is empty, of `public_url`) and `bound_port`.
SshEndpoint EndpointOf(const std::string& public_address, const std::string& public_url,
                       uint16_t bound_port, HostKey host_key);

}  // namespace gpunex::platform::sshgate
