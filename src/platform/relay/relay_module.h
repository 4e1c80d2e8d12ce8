// The relay folder as a module of gpunexd (module/module.h): the Relay service, its
// figures in /metrics, and the acceptors of its WebSocket routes, which gpunexd's main
// registers with the server (docs/access.md).
#pragma once

#include <string_view>

#include "platform/http/proxy.h"
#include "platform/http/websocket.h"
#include "platform/module/module.h"
#include "platform/relay/relay.h"

namespace gpunex::platform::api {
struct ApiContext;
}  // namespace gpunex::platform::api

namespace gpunex::platform::relay {

Module RelayModule();

// GET kPeerPath (peer.h): another instance of the cluster, which opens streams to the agents
// held here; its Authorization header shows the secret it registered (cluster_store.h).
http::WebSocketAcceptor PeerAcceptor(const api::ApiContext& ctx);

// GET kDataChannelPath?machine_id=...: an agent's data channel, with the agent token of
// the machine's connected control channel.
http::WebSocketAcceptor DataChannelAcceptor(const api::ApiContext& ctx);

// GET kPortConnectPattern: a WebSocket carrying the bytes of one TCP connection to a
// declared port of the caller's running rental (binary messages both ways).
http::WebSocketAcceptor PortConnectAcceptor(const api::ApiContext& ctx);
inline constexpr std::string_view kPortConnectPattern = "/api/v1/rentals/{id}/ports/{port}/connect";

// GET kExecPattern?command=...&command=...&tty=true|false&stdin=true|false: a command run
// in the caller's running rental's container, over a WebSocket speaking kExecSubprotocol
// (Kubernetes' exec channels: 0 stdin, 1 stdout, 2 stderr, 3 status, 4 resize, 255 close;
// docs/access.md, "Exec").
http::WebSocketAcceptor ExecAcceptor(const api::ApiContext& ctx);
inline constexpr std::string_view kExecPattern = "/api/v1/rentals/{id}/exec";
inline constexpr std::string_view kExecSubprotocol = "v5.channel.k8s.io";

// GET and PUT kFilesPattern?path=/abs/path: a tar of that path out of the caller's running
// rental's container, or a tar unpacked into that directory, streamed through the agent to
// the Docker Engine's archive API (docs/access.md, "Files").
http::ProxyAuthorizer FilesAuthorizer(const api::ApiContext& ctx);
inline constexpr std::string_view kFilesPattern = "/api/v1/rentals/{id}/files";

}  // namespace gpunex::platform::relay
