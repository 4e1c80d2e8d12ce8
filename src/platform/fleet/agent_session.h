// One agent connection, from the agent token check to its close: the hello that
// registers (or recognises) the machine and reconciles its workloads, then heartbeats,
// command acknowledgements and results, workload events and logs, each handled by the
// Fleet (fleet.h) in a transaction of its own. Before a hello is accepted, an invalid
// message is answered with an error message and the connection is closed. After it, the
// connection carries every rental on the machine: an invalid message (or one the agent may
// not send, such as a result of another machine's command) is refused alone: nothing is
// changed, it is logged and counted (Fleet::message_counts), and the session stays up.
// (The agent ends its session on an error message, so none is sent for these.)
//
// Thread-safety: OnMessage and OnClose are called serially by the connection (never
// concurrently with each other); the other methods may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "common/agent_protocol.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/fleet/fleet.h"

namespace gpunex::platform::fleet {

class AgentSession : public std::enable_shared_from_this<AgentSession> {
 public:
  // Made by Fleet::Open after the agent token was verified.
  AgentSession(Fleet& fleet, std::string provider_id, std::string token_id,
               std::shared_ptr<AgentChannel> channel, std::string remote_addr);

  // Handles one received text message.
  void OnMessage(const std::string& text);
  void OnClose();

  std::string machine_id() const EXCLUDES(mu_);
  bool Send(const protocol::PlatformMessage& m);
  // Sends an error message and closes the connection (once; later calls do nothing).
  void Refuse(std::string code, std::string message);
  Timestamp opened_at() const { return opened_at_; }
  const std::string& token_id() const { return token_id_; }
  bool said_hello() const { return hello_done_.load(); }
  const std::string& provider_id() const { return provider_id_; }
  // Records that the command goes out on this connection; false when it already did.
  bool MarkSent(const std::string& command_id) EXCLUDES(mu_);

 private:
  Status HandleHello(const protocol::Hello& h);
  // Refuses one message after the hello, keeping the session (see the top of this file).
  void RefuseMessage(std::string_view code, const std::string& message);

  Fleet& fleet_;
  const std::string provider_id_;
  const std::string token_id_;
  const std::shared_ptr<AgentChannel> channel_;
  const std::string remote_addr_;
  const Timestamp opened_at_;
  std::atomic<bool> hello_done_{false};
  std::atomic<bool> closed_{false};
  // Set when the platform refuses the connection: messages still queued are ignored.
  std::atomic<bool> refused_{false};
  std::atomic<int64_t> refused_messages_{0};  // by RefuseMessage
  mutable Mutex mu_;
  std::string machine_id_ GUARDED_BY(mu_);
  std::set<std::string> sent_commands_ GUARDED_BY(mu_);
};

}  // namespace gpunex::platform::fleet
