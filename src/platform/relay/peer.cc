#include "platform/relay/peer.h"

#include <poll.h>

#include <atomic>
#include <map>
#include <thread>

#include "common/agent_protocol.h"
#include "common/event_fd.h"
#include "common/log.h"
#include "common/net/websocket_client.h"
#include "common/thread_annotations.h"

namespace gpunex::platform::relay {

using SteadyClock = std::chrono::steady_clock;

std::string EncodePeerOpen(std::string_view machine_id, const StreamTarget& target) {
  std::string out(machine_id);
  out += '\n';
  out += EncodeStreamTarget(target);
  return out;
}

StatusOr<PeerOpen> ParsePeerOpen(std::string_view payload) {
  const size_t nl = payload.find('\n');
  if (nl == std::string_view::npos || nl == 0 || nl > 64) {
    return InvalidArgument("a peer open starts with the machine's id and a newline");
  }
  PeerOpen out;
  out.machine_id = std::string(payload.substr(0, nl));
  // Ids share the syntax of a workload's id.
  if (!protocol::IsWorkloadId(out.machine_id)) {
    return InvalidArgument("a peer open's machine id is not an id");
  }
  GPUNEX_ASSIGN_OR_RETURN(out.target, ParseStreamTarget(payload.substr(nl + 1)));
  return out;
}

// --- the opening instance's end ---

struct PeerLink::State {
  // Declared before the client, which signals it: destroyed after it.
  EventFd wake;
  std::unique_ptr<net::WebSocketClient> client;
  std::string address;
  std::atomic<bool> want_writable{false};
  Mutex mu;
  int close_code GUARDED_BY(mu) = 0;
  std::string close_reason GUARDED_BY(mu);
  Mutex ended_mu;
  CondVar ended_cv;
  bool ended GUARDED_BY(ended_mu) = false;
  std::thread thread;

  bool Writable() const {
    return client->QueuedBytes() <= http::kWebSocketWritableBytes &&
           client->QueuedMessages() <= http::kWebSocketWritableMessages;
  }

  void Run(std::shared_ptr<http::WebSocketSession> session) {
    for (;;) {
      pollfd p{.fd = wake.fd(), .events = POLLIN, .revents = 0};
      (void)poll(&p, 1, 1000);
      wake.Clear();
      int code = 0;
      std::string reason;
      {
        MutexLock lock(&mu);
        code = close_code;
        reason = close_reason;
      }
      if (code != 0) {
        client->Close(code, reason);
        break;
      }
      bool lost = false;
      for (;;) {
        auto got = client->Receive(std::chrono::milliseconds(0));
        if (!got.ok()) {
          LogInfo("relay.peer_closed", {{"peer", address}, {"reason", got.status().message()}});
          lost = true;
          break;
        }
        if (!got->has_value()) break;
        session->OnBinary(std::move(**got));
      }
      if (lost) break;
      if (want_writable && Writable()) {
        want_writable = false;
        session->OnWritable();
      }
    }
    session->OnClose();
    session.reset();
    MutexLock lock(&ended_mu);
    ended = true;
    ended_cv.SignalAll();
  }
};

StatusOr<std::shared_ptr<PeerLink>> PeerLink::Connect(const PeerRoute& route) {
  net::WebSocketClientOptions o;
  o.connect_timeout = std::chrono::seconds(5);
  o.ca_file = route.ca_file;
  o.proxy_url = "";  // instances reach each other directly, whatever the environment says
  o.binary = true;
  o.headers = {{"Authorization", route.authorization}};
  // A data frame and its header, with room to spare.
  o.max_message_bytes = mux::kMaxDataBytes + 1024;
  auto state = std::make_shared<State>();
  GPUNEX_ASSIGN_OR_RETURN(state->client, net::WebSocketClient::Connect(route.url, o));
  state->address = route.url;
  state->client->NotifyOn(state->wake.fd(), http::kWebSocketWritableBytes,
                          http::kWebSocketWritableMessages);
  return std::shared_ptr<PeerLink>(new PeerLink(std::move(state)));
}

PeerLink::~PeerLink() {
  // The thread holds the state: it ends on its own once the connection closes.
  Close(1001, "the instance's link is gone");
  if (state_->thread.joinable()) state_->thread.detach();
}

void PeerLink::Start(std::shared_ptr<http::WebSocketSession> session) {
  state_->thread = std::thread(
      [state = state_, session = std::move(session)]() mutable { state->Run(std::move(session)); });
}

bool PeerLink::WaitEnded(std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  MutexLock lock(&state_->ended_mu);
  while (!state_->ended && SteadyClock::now() < deadline) {
    state_->ended_cv.WaitFor(&state_->ended_mu, deadline - SteadyClock::now());
  }
  return state_->ended;
}

bool PeerLink::Send(std::string) { return false; }  // the data channel sends binary only

bool PeerLink::SendBinary(std::string bytes) { return state_->client->Send(std::move(bytes)).ok(); }

size_t PeerLink::QueuedBytes() const { return state_->client->QueuedBytes(); }

bool PeerLink::Writable() const { return state_->Writable(); }

void PeerLink::NotifyWhenWritable() {
  state_->want_writable = true;
  state_->wake.Signal();
}

void PeerLink::Close(int code, std::string reason) {
  {
    MutexLock lock(&state_->mu);
    if (state_->close_code != 0) return;
    state_->close_code = code < 1000 ? 1000 : code;
    state_->close_reason = std::move(reason);
  }
  state_->wake.Signal();
}

std::string PeerLink::RemoteAddr() const { return state_->address; }

void SendWhatMayGo(mux::Session& session, http::WebSocketConnection& ws) {
  const auto now = SteadyClock::now();
  while (ws.Writable()) {
    std::optional<std::string> m = session.NextMessage(now);
    if (!m) return;
    if (!ws.SendBinary(std::move(*m))) return;  // closing: the session's OnClose follows
  }
  if (session.WantsToSend()) ws.NotifyWhenWritable();
}

// --- the holding instance's end ---

namespace {

class PeerServer;

// One stream's events on this instance's data channel, for the peer server.
class LegSink final : public StreamSink {
 public:
  LegSink(std::weak_ptr<PeerServer> server, uint32_t id) : server_(std::move(server)), id_(id) {}
  void OnAccepted() override;
  void OnReadable() override;
  void OnRoom() override;
  void OnFinished() override;
  void OnEnded(const StreamEnd& end) override;

 private:
  const std::weak_ptr<PeerServer> server_;
  const uint32_t id_;
};

// The streams one peer opened here: each a mux stream of the peer's connection joined to a
// stream of a data channel held here.
class PeerServer final : public http::WebSocketSession,
                         public std::enable_shared_from_this<PeerServer> {
 public:
  PeerServer(Relay& relay, std::shared_ptr<http::WebSocketConnection> ws,
             const mux::Options& options)
      : relay_(relay),
        ws_(std::move(ws)),
        session_(mux::Session::Role::kResponder, options, SteadyClock::now()) {}

  bool AcceptsBinary() const override { return true; }
  void OnBinary(std::string bytes) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (closed_) return;
    Status st = session_.Receive(std::move(bytes), SteadyClock::now());
    if (!st.ok()) {
      LogWarn("relay.peer_protocol_error", {{"peer", ws_->RemoteAddr()}, {"error", st.message()}});
      PumpLocked();
      ws_->Close(1002, st.message());
      closed_ = true;
      legs_.clear();
      return;
    }
    AfterLocked();
  }
  void OnMessage(std::string) override {
    ws_->Close(1003, "the peer connection carries binary messages only");
  }
  void OnWritable() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    AfterLocked();
  }
  void OnClose() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    closed_ = true;
    legs_.clear();  // dropping the streams resets them
  }

  // --- from the streams on this instance's channels ---

  void LocalAccepted(uint32_t id) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Leg* l = Find(id);
    if (!l || l->accepted) return;
    l->accepted = true;
    (void)session_.Accept(id);
    ToPeer(id, *l);
    ToLocal(id, *l);
    AfterLocked();
  }
  void LocalReadable(uint32_t id, bool finished) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Leg* l = Find(id);
    if (!l) return;
    if (finished) l->local_finished = true;
    ToPeer(id, *l);
    AfterLocked();
  }
  void LocalRoom(uint32_t id) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (Leg* l = Find(id)) ToLocal(id, *l);
    AfterLocked();
  }
  void LocalEnded(uint32_t id, const StreamEnd& end) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Leg* l = Find(id);
    if (!l) return;
    if (end.clean) {
      // Everything was read both ways: what waits goes out, then the end.
      l->local_finished = true;
      ToPeer(id, *l);
    } else if (end.refused) {
      (void)session_.Refuse(id, end.code, end.reason);
      legs_.erase(id);
    } else {
      session_.Reset(id, end.code, end.reason);
      legs_.erase(id);
    }
    AfterLocked();
  }

 private:
  struct Leg {
    std::shared_ptr<LegSink> sink;  // the relay keeps it weakly
    std::unique_ptr<Stream> local;
    std::string to_peer;  // read from the local stream, not yet taken by the peer's
    bool accepted = false;
    bool local_finished = false;  // the local stream sends nothing more
    bool peer_finished = false;   // the peer sends nothing more
    bool fin_to_peer = false;
    bool fin_to_local = false;
  };

  Leg* Find(uint32_t id) REQUIRES(mu_) {
    auto it = legs_.find(id);
    return it == legs_.end() ? nullptr : &it->second;
  }

  void Incoming(uint32_t id, std::string_view payload) REQUIRES(mu_) {
    auto open = ParsePeerOpen(payload);
    if (!open.ok()) {
      (void)session_.Refuse(id, mux::Code::kRefused, open.status().message());
      return;
    }
    auto sink = std::make_shared<LegSink>(weak_from_this(), id);
    auto stream = relay_.OpenHere(open->machine_id, open->target, sink);
    if (!stream.ok()) {
      // The agent left this instance (it moved, or is reconnecting): the opener asks again.
      const mux::Code code = stream.status().code() == StatusCode::kResourceExhausted
                                 ? mux::Code::kLimit
                                 : mux::Code::kShutdown;
      (void)session_.Refuse(id, code, stream.status().message());
      return;
    }
    Leg& leg = legs_[id];
    leg.sink = std::move(sink);
    leg.local = std::move(*stream);
  }

  // Moves what the local stream has to the peer's stream, as far as it takes it; then its
  // end.
  void ToPeer(uint32_t id, Leg& l) REQUIRES(mu_) {
    if (!l.accepted) return;
    for (;;) {
      if (l.to_peer.empty()) {
        l.to_peer = l.local->Read(mux::kMaxDataBytes);
        if (l.to_peer.empty()) break;
      }
      auto n = session_.Write(id, l.to_peer);
      if (!n.ok()) {
        l.to_peer.clear();
        return;
      }
      l.to_peer.erase(0, *n);
      if (!l.to_peer.empty()) return;  // a kWritable event follows
    }
    if (l.local_finished && !l.fin_to_peer) {
      l.fin_to_peer = true;
      (void)session_.Finish(id);
    }
  }

  // Moves what the peer sent to the local stream, as far as it takes it; then its end.
  void ToLocal(uint32_t id, Leg& l) REQUIRES(mu_) {
    for (;;) {
      const std::string_view got = session_.Peek(id);
      if (got.empty()) break;
      auto n = l.local->Write(got);
      if (!n.ok() || *n == 0) return;  // OnRoom follows (or the stream's end)
      (void)session_.Consume(id, *n, SteadyClock::now());
    }
    if (l.peer_finished && !l.fin_to_local) {
      l.fin_to_local = true;
      (void)l.local->Finish();
    }
  }

  // After every change: handles the session's events and sends what may go.
  void AfterLocked() REQUIRES(mu_) {
    for (int round = 0; round < 16; ++round) {
      PumpLocked();
      std::vector<mux::Event> events = session_.TakeEvents();
      if (events.empty()) break;
      for (mux::Event& e : events) {
        if (e.kind == mux::Event::Kind::kIncoming) {
          Incoming(e.stream, e.data);
          continue;
        }
        Leg* l = Find(e.stream);
        if (!l) continue;
        switch (e.kind) {
          case mux::Event::Kind::kFinished:
            l->peer_finished = true;
            ToLocal(e.stream, *l);
            break;
          case mux::Event::Kind::kReadable:
            ToLocal(e.stream, *l);
            break;
          case mux::Event::Kind::kWritable:
            ToPeer(e.stream, *l);
            break;
          case mux::Event::Kind::kReset:
            l->local->Reset(e.code, e.data);
            legs_.erase(e.stream);
            break;
          case mux::Event::Kind::kClosed:
            legs_.erase(e.stream);
            break;
          default:
            break;  // this side opens nothing
        }
      }
    }
  }

  void PumpLocked() REQUIRES(mu_) {
    if (!closed_) SendWhatMayGo(session_, *ws_);
  }

  Relay& relay_;
  const std::shared_ptr<http::WebSocketConnection> ws_;
  Mutex mu_;
  mux::Session session_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  std::map<uint32_t, Leg> legs_ GUARDED_BY(mu_);
};

void LegSink::OnAccepted() {
  if (auto s = server_.lock()) s->LocalAccepted(id_);
}
void LegSink::OnReadable() {
  if (auto s = server_.lock()) s->LocalReadable(id_, false);
}
void LegSink::OnRoom() {
  if (auto s = server_.lock()) s->LocalRoom(id_);
}
void LegSink::OnFinished() {
  if (auto s = server_.lock()) s->LocalReadable(id_, true);
}
void LegSink::OnEnded(const StreamEnd& end) {
  if (auto s = server_.lock()) s->LocalEnded(id_, end);
}

}  // namespace

std::shared_ptr<http::WebSocketSession> ServePeer(Relay& relay,
                                                  std::shared_ptr<http::WebSocketConnection> ws,
                                                  const mux::Options& options) {
  return std::make_shared<PeerServer>(relay, std::move(ws), options);
}

}  // namespace gpunex::platform::relay
