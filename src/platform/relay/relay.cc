#include "platform/relay/relay.h"

#include <atomic>
#include <deque>
#include <set>
#include <utility>
#include <vector>

#include "common/log.h"
#include "platform/relay/peer.h"

namespace gpunex::platform::relay {

using SteadyClock = std::chrono::steady_clock;

// What the relay's thread and the channels share: the channels by machine, and the
// channels that have sink calls waiting for the thread.
struct Relay::Shared {
  Mutex mu;
  CondVar cv;
  bool stopping GUARDED_BY(mu) = false;
  std::map<std::string, std::shared_ptr<DataChannel>> channels GUARDED_BY(mu);
  // The channels to other instances (PeerRoute), by instance id, and their connections
  // (until their threads have ended).
  std::map<std::string, std::shared_ptr<DataChannel>> peers GUARDED_BY(mu);
  std::vector<std::shared_ptr<PeerLink>> links GUARDED_BY(mu);
  std::deque<std::shared_ptr<DataChannel>> due GUARDED_BY(mu);
  // Over every channel, ever.
  std::atomic<int64_t> bytes_to_agents{0};
  std::atomic<int64_t> bytes_from_agents{0};

  // Traffic per (rental, port): not yet metered, and since start (until the rental ends).
  // Streams count their own bytes; a channel adds them here when the relay meters and when
  // a stream ends (under the channel's lock: never the other way round).
  using TrafficKey = std::pair<std::string, uint16_t>;
  Mutex traffic_mu;
  std::map<TrafficKey, PortTraffic> unmetered GUARDED_BY(traffic_mu);
  std::map<TrafficKey, PortTraffic> totals GUARDED_BY(traffic_mu);
  std::map<std::string, std::string> rental_of_workload GUARDED_BY(traffic_mu);

  void AddTraffic(const std::string& workload_id, const std::string& rental_id, uint16_t port,
                  int64_t in, int64_t out) EXCLUDES(traffic_mu) {
    if (rental_id.empty()) return;
    MutexLock lock(&traffic_mu);
    for (auto* m : {&unmetered, &totals}) {
      PortTraffic& t = (*m)[{rental_id, port}];
      t.rental_id = rental_id;
      t.port = port;
      t.in_bytes += in;
      t.out_bytes += out;
    }
    rental_of_workload[workload_id] = rental_id;
  }

  void Post(std::shared_ptr<DataChannel> channel) EXCLUDES(mu) {
    {
      MutexLock lock(&mu);
      due.push_back(std::move(channel));
    }
    cv.Signal();
  }
};

// One agent's data channel: the mux session over its WebSocket.
class DataChannel final : public std::enable_shared_from_this<DataChannel> {
 public:
  // `machine_id`: the agent's machine; with `peer`, the id of the instance that holds the
  // machines this channel's streams reach (each open names its machine).
  DataChannel(std::string machine_id, std::shared_ptr<http::WebSocketConnection> ws,
              const RelayOptions& options, std::weak_ptr<Relay::Shared> shared, bool peer = false)
      : machine_id_(std::move(machine_id)),
        ws_(std::move(ws)),
        shared_(std::move(shared)),
        peer_(peer),
        holding_(peer ? nullptr : options.holding),
        max_per_workload_(options.max_streams_per_workload),
        session_(mux::Session::Role::kInitiator, options.mux, SteadyClock::now()) {}

  const std::string& machine_id() const { return machine_id_; }

  // --- from the WebSocket session (one call at a time) ---

  // The sink calls these make are made on the calling thread (the connection's, one call
  // at a time) once the lock is released, not handed to the relay's thread.
  void Received(std::string message) EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      if (closed_) return;
      Status st = session_.Receive(std::move(message), SteadyClock::now());
      if (!st.ok()) {
        LogWarn("relay.protocol_error", {{"machine_id", machine_id_}, {"error", st.message()}});
        PumpLocked();  // the go-away saying why
        ws_->Close(1002, st.message());
        EndAllLocked(mux::Code::kProtocol, "the agent broke the data channel's rules");
      }
      AfterLocked(/*post=*/false);
    }
    Deliver();
  }

  void Writable() EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      AfterLocked(/*post=*/false);
    }
    Deliver();
  }

  // The WebSocket is gone: every stream ends.
  void Closed() EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      EndAllLocked(mux::Code::kShutdown, peer_ ? "the connection to the instance holding the "
                                                 "machine's agent closed"
                                               : "the machine's data channel closed");
      ScheduleLocked();
    }
    bool was_current = false;
    if (auto shared = shared_.lock()) {
      MutexLock lock(&shared->mu);
      auto& map = peer_ ? shared->peers : shared->channels;
      auto it = map.find(machine_id_);
      if (it != map.end() && it->second.get() == this) {
        map.erase(it);
        was_current = true;
      }
    }
    if (was_current && holding_) holding_(machine_id_, false);
  }

  // Replaced by a newer channel of the machine, or the relay stops.
  void Shutdown(int code, const std::string& reason) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    session_.GoAway(mux::Code::kShutdown, reason);
    PumpLocked();
    ws_->Close(code, reason);
    EndAllLocked(mux::Code::kShutdown, reason);
    ScheduleLocked();
  }

  void Tick() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    AfterLocked();
  }

  // --- from streams' users ---

  StatusOr<uint32_t> Open(const std::string& machine_id, const StreamTarget& target,
                          std::weak_ptr<StreamSink> sink, const std::string& rental_id)
      EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (closed_) return Unavailable("the machine's data channel is closing");
    if (per_workload_[target.workload_id] >= max_per_workload_) {
      return ResourceExhausted("the rental has " + std::to_string(max_per_workload_) +
                               " connections open already");
    }
    GPUNEX_ASSIGN_OR_RETURN(uint32_t id, session_.Open(peer_ ? EncodePeerOpen(machine_id, target)
                                                             : EncodeStreamTarget(target)));
    ++per_workload_[target.workload_id];
    streams_[id] = Entry{std::move(sink), target.workload_id, rental_id, target.port};
    AfterLocked();
    return id;
  }

  StatusOr<size_t> Write(uint32_t id, std::string_view data) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    GPUNEX_ASSIGN_OR_RETURN(size_t n, session_.Write(id, data));
    if (auto shared = shared_.lock()) {
      shared->bytes_to_agents += static_cast<int64_t>(n);
    }
    if (auto it = streams_.find(id); it != streams_.end()) it->second.in += static_cast<int64_t>(n);
    AfterLocked();
    return n;
  }

  Status Finish(uint32_t id) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Status st = session_.Finish(id);
    AfterLocked();
    return st;
  }

  std::string Read(uint32_t id, size_t max) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    auto got = session_.Read(id, max, SteadyClock::now());
    if (!got.ok()) return {};
    if (auto shared = shared_.lock()) {
      shared->bytes_from_agents += static_cast<int64_t>(got->size());
    }
    if (auto it = streams_.find(id); it != streams_.end()) {
      it->second.out += static_cast<int64_t>(got->size());
    }
    AfterLocked();
    return std::move(*got);
  }

  void Reset(uint32_t id, mux::Code code, std::string_view reason) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (streams_.contains(id)) {
      session_.Reset(id, code, reason);
      Forget(id);  // its user is the one ending it: nothing more to tell
    }
    AfterLocked();
  }

  // The workloads that have streams open.
  std::vector<std::string> Workloads() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& [workload, n] : per_workload_) out.push_back(workload);
    return out;
  }

  // Resets the streams of `workloads` (their rentals ended).
  void EndWorkloads(const std::set<std::string>& workloads) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    std::vector<uint32_t> ids;
    for (const auto& [id, entry] : streams_) {
      if (workloads.contains(entry.workload_id)) ids.push_back(id);
    }
    for (uint32_t id : ids) {
      const std::string reason = "the rental has ended";
      session_.Reset(id, mux::Code::kGone, reason);
      calls_.emplace_back(streams_.at(id).sink,
                          mux::Event{mux::Event::Kind::kReset, id, mux::Code::kGone, reason});
      Forget(id);
    }
    AfterLocked();
  }

  // Adds what the open streams moved since the last call to the relay's traffic.
  void Meter() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    for (auto& [id, entry] : streams_) MeterLocked(entry);
  }

  size_t open_streams() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return streams_.size();
  }

  // --- on the relay's thread, or after Received and Writable ---

  // Makes the sink calls that wait, in order, unless another thread is making this
  // channel's calls already (it makes these too): a sink is called one call at a time.
  void Deliver() EXCLUDES(mu_) {
    std::deque<std::pair<std::weak_ptr<StreamSink>, mux::Event>> calls;
    {
      MutexLock lock(&mu_);
      scheduled_ = false;
      if (delivering_ || calls_.empty()) return;
      delivering_ = true;
      calls.swap(calls_);
    }
    for (;;) {
      Call(calls);
      calls.clear();
      MutexLock lock(&mu_);
      if (calls_.empty()) {
        delivering_ = false;
        return;
      }
      calls.swap(calls_);
    }
  }

 private:
  struct Entry {
    std::weak_ptr<StreamSink> sink;
    std::string workload_id;
    std::string rental_id;  // metered to; "" : not metered
    uint16_t port = 0;
    int64_t in = 0;  // bytes written and read since the last MeterLocked
    int64_t out = 0;
  };

  void Call(std::deque<std::pair<std::weak_ptr<StreamSink>, mux::Event>>& calls) {
    for (auto& [weak, event] : calls) {
      std::shared_ptr<StreamSink> sink = weak.lock();
      if (!sink) continue;
      switch (event.kind) {
        case mux::Event::Kind::kAccepted:
          sink->OnAccepted();
          break;
        case mux::Event::Kind::kReadable:
          sink->OnReadable();
          break;
        case mux::Event::Kind::kWritable:
          sink->OnRoom();
          break;
        case mux::Event::Kind::kFinished:
          sink->OnFinished();
          break;
        case mux::Event::Kind::kRefused:
          sink->OnEnded(StreamEnd{false, true, event.code, event.data});
          break;
        case mux::Event::Kind::kReset:
          sink->OnEnded(StreamEnd{false, false, event.code, event.data});
          break;
        case mux::Event::Kind::kClosed:
          sink->OnEnded(StreamEnd{true, false, mux::Code::kCancelled, ""});
          break;
        case mux::Event::Kind::kIncoming:
          break;  // refused where it arrived
      }
    }
  }

  // After every change: sends what may go, and queues the sink calls the session's
  // events make, for the relay's thread unless `post` is false (the caller delivers them
  // after it releases the lock).
  void AfterLocked(bool post = true) REQUIRES(mu_) {
    // Sending makes events (a send buffer with room again), and events make frames (a
    // refusal): round until neither is left, so that no event waits for the next change.
    for (int round = 0; round < 16; ++round) {
      PumpLocked();
      std::vector<mux::Event> events = session_.TakeEvents();
      if (events.empty()) break;
      for (mux::Event& e : events) {
        if (e.kind == mux::Event::Kind::kIncoming) {
          // The platform opens the streams; the agent opens none.
          (void)session_.Refuse(e.stream, mux::Code::kRefused, "the platform takes no streams");
          continue;
        }
        auto it = streams_.find(e.stream);
        if (it == streams_.end()) continue;
        std::weak_ptr<StreamSink> sink = it->second.sink;
        const bool last = e.kind == mux::Event::Kind::kRefused ||
                          e.kind == mux::Event::Kind::kReset || e.kind == mux::Event::Kind::kClosed;
        if (last) Forget(e.stream);
        calls_.emplace_back(std::move(sink), std::move(e));
      }
    }
    if (post) ScheduleLocked();
  }

  void PumpLocked() REQUIRES(mu_) {
    if (!closed_) SendWhatMayGo(session_, *ws_);
  }

  void ScheduleLocked() REQUIRES(mu_) {
    if (calls_.empty() || scheduled_) return;
    if (auto shared = shared_.lock()) {
      scheduled_ = true;
      shared->Post(shared_from_this());
    }
  }

  // Adds what `entry` moved since the last call to the relay's traffic.
  void MeterLocked(Entry& entry) REQUIRES(mu_) {
    if (entry.in == 0 && entry.out == 0) return;
    if (auto shared = shared_.lock()) {
      shared->AddTraffic(entry.workload_id, entry.rental_id, entry.port, entry.in, entry.out);
    }
    entry.in = entry.out = 0;
  }

  void Forget(uint32_t id) REQUIRES(mu_) {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    MeterLocked(it->second);
    auto w = per_workload_.find(it->second.workload_id);
    if (w != per_workload_.end() && --w->second <= 0) per_workload_.erase(w);
    streams_.erase(it);
  }

  void EndAllLocked(mux::Code code, const std::string& reason) REQUIRES(mu_) {
    closed_ = true;
    for (auto& [id, entry] : streams_) {
      MeterLocked(entry);
      session_.Reset(id, code, reason);
      mux::Event e{mux::Event::Kind::kReset, id, code, reason};
      calls_.emplace_back(entry.sink, std::move(e));
    }
    streams_.clear();
    per_workload_.clear();
  }

  const std::string machine_id_;
  const std::shared_ptr<http::WebSocketConnection> ws_;
  const std::weak_ptr<Relay::Shared> shared_;
  const bool peer_;
  const std::function<void(const std::string&, bool)> holding_;
  const int max_per_workload_;

  Mutex mu_;
  mux::Session session_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  std::map<uint32_t, Entry> streams_ GUARDED_BY(mu_);
  std::map<std::string, int> per_workload_ GUARDED_BY(mu_);
  std::deque<std::pair<std::weak_ptr<StreamSink>, mux::Event>> calls_ GUARDED_BY(mu_);
  bool scheduled_ GUARDED_BY(mu_) = false;   // posted to the relay's thread
  bool delivering_ GUARDED_BY(mu_) = false;  // a thread is making the sink calls
};

namespace {

// The server's WebSocket session of a data channel.
class ChannelSession final : public http::WebSocketSession {
 public:
  ChannelSession(std::shared_ptr<DataChannel> channel,
                 std::shared_ptr<http::WebSocketConnection> ws)
      : channel_(std::move(channel)), ws_(std::move(ws)) {}

  bool AcceptsBinary() const override { return true; }
  void OnBinary(std::string bytes) override { channel_->Received(std::move(bytes)); }
  void OnMessage(std::string) override {
    ws_->Close(1003, "the data channel carries binary messages only");
  }
  void OnWritable() override { channel_->Writable(); }
  void OnClose() override { channel_->Closed(); }

 private:
  const std::shared_ptr<DataChannel> channel_;
  const std::shared_ptr<http::WebSocketConnection> ws_;
};

// A relay stream as the proxy's upstream. The relay keeps sinks weakly: the adapter
// lives as long as the upstream.
class UpstreamAdapter final : public StreamSink {
 public:
  UpstreamAdapter(std::weak_ptr<http::UpstreamSink> to, std::string what)
      : to_(std::move(to)), what_(std::move(what)) {}
  void OnReadable() override {
    if (auto s = to_.lock()) s->OnReadable();
  }
  void OnRoom() override {
    if (auto s = to_.lock()) s->OnRoom();
  }
  void OnFinished() override {
    if (auto s = to_.lock()) s->OnFinished();
  }
  void OnEnded(const StreamEnd& end) override {
    auto s = to_.lock();
    if (!s) return;
    http::UpstreamEnd out;
    out.clean = end.clean;
    switch (end.code) {
      case mux::Code::kGone:
        out.http_status = 410;
        out.reason = "the rental has ended";
        break;
      case mux::Code::kUnreachable:
        out.http_status = 502;
        out.reason = "nothing answers on " + what_;
        break;
      case mux::Code::kShutdown:
      case mux::Code::kLimit:
        out.http_status = 503;
        out.reason = end.reason.empty() ? "the machine's agent is not reachable" : end.reason;
        break;
      default:
        out.http_status = 502;
        out.reason = end.reason.empty() ? "the connection to " + what_ + " failed" : end.reason;
        break;
    }
    s->OnEnded(out);
  }

 private:
  const std::weak_ptr<http::UpstreamSink> to_;
  const std::string what_;  // "port 8080 of the container"
};

class RelayUpstream final : public http::Upstream {
 public:
  RelayUpstream(std::shared_ptr<UpstreamAdapter> sink, std::unique_ptr<Stream> stream)
      : sink_(std::move(sink)), stream_(std::move(stream)) {}
  StatusOr<size_t> Write(std::string_view data) override { return stream_->Write(data); }
  Status Finish() override { return stream_->Finish(); }
  std::string Read(size_t max) override { return stream_->Read(max); }

 private:
  const std::shared_ptr<UpstreamAdapter> sink_;
  const std::unique_ptr<Stream> stream_;
};

}  // namespace

Stream::~Stream() { channel_->Reset(id_, mux::Code::kCancelled, "closed by the platform"); }

StatusOr<size_t> Stream::Write(std::string_view data) { return channel_->Write(id_, data); }
size_t Stream::WriteSome(std::string* pending) {
  size_t taken = 0;
  while (!pending->empty()) {
    auto n = Write(*pending);
    if (!n.ok()) {
      pending->clear();
      break;
    }
    if (*n == 0) break;
    taken += *n;
    pending->erase(0, *n);
  }
  return taken;
}

int CloseCodeFor(mux::Code code) {
  switch (code) {
    case mux::Code::kRefused:
      return 4403;
    case mux::Code::kUnreachable:
      return 4502;
    case mux::Code::kLimit:
      return 4429;
    case mux::Code::kGone:
      return 4410;
    case mux::Code::kShutdown:
      return 4503;
    case mux::Code::kCancelled:
      return 4499;
    case mux::Code::kInternal:
    case mux::Code::kProtocol:
      break;
  }
  return 4500;
}
Status Stream::Finish() { return channel_->Finish(id_); }
std::string Stream::Read(size_t max) { return channel_->Read(id_, max); }
void Stream::Reset(mux::Code code, std::string_view reason) { channel_->Reset(id_, code, reason); }

Relay::Relay(RelayOptions options) : options_(options), shared_(std::make_shared<Shared>()) {
  thread_ = std::thread([this] { Run(); });
}

Relay::~Relay() {
  std::map<std::string, std::shared_ptr<DataChannel>> channels, peers;
  std::vector<std::shared_ptr<PeerLink>> links;
  {
    MutexLock lock(&shared_->mu);
    shared_->stopping = true;
    channels.swap(shared_->channels);
    peers.swap(shared_->peers);
    links.swap(shared_->links);
  }
  shared_->cv.SignalAll();
  thread_.join();
  for (auto& [machine, channel] : channels) channel->Shutdown(1001, "the platform is stopping");
  for (auto& [instance, channel] : peers) channel->Shutdown(1001, "the platform is stopping");
  // A link's thread calls into its channel until it ends: wait for it (its close handshake
  // takes at most a few seconds).
  for (auto& link : links) {
    if (!link->WaitEnded(std::chrono::seconds(6))) {
      LogWarn("relay.peer_link_stuck", {{"peer", link->RemoteAddr()}});
    }
  }
  Meter();  // what the ended streams moved since the last call is not lost at a stop
}

void Relay::Run() {
  auto next_tick = SteadyClock::now() + options_.tick;
  auto next_meter = SteadyClock::now() + options_.meter_interval;
  for (;;) {
    std::shared_ptr<DataChannel> due;
    std::vector<std::shared_ptr<DataChannel>> tick;
    {
      MutexLock lock(&shared_->mu);
      while (!shared_->stopping && shared_->due.empty() && SteadyClock::now() < next_tick) {
        shared_->cv.WaitFor(&shared_->mu, next_tick - SteadyClock::now());
      }
      if (shared_->stopping) break;
      if (!shared_->due.empty()) {
        due = std::move(shared_->due.front());
        shared_->due.pop_front();
      } else {
        for (auto& [machine, channel] : shared_->channels) tick.push_back(channel);
        for (auto& [instance, channel] : shared_->peers) tick.push_back(channel);
        // Links whose threads have ended are let go.
        std::erase_if(shared_->links, [](const std::shared_ptr<PeerLink>& l) {
          return l->WaitEnded(std::chrono::milliseconds(0));
        });
        next_tick = SteadyClock::now() + options_.tick;
      }
    }
    if (due) due->Deliver();
    for (auto& channel : tick) channel->Tick();
    if (!tick.empty()) EndUnreachable(tick);
    if (SteadyClock::now() >= next_meter) {
      Meter();
      next_meter = SteadyClock::now() + options_.meter_interval;
    }
  }
}

void Relay::Meter() {
  std::vector<std::shared_ptr<DataChannel>> channels;
  {
    MutexLock lock(&shared_->mu);
    for (auto& [machine, channel] : shared_->channels) channels.push_back(channel);
    for (auto& [instance, channel] : shared_->peers) channels.push_back(channel);
  }
  for (auto& channel : channels) channel->Meter();
  if (!options_.meter) return;
  std::map<Shared::TrafficKey, PortTraffic> taken;
  {
    MutexLock lock(&shared_->traffic_mu);
    taken.swap(shared_->unmetered);
  }
  if (taken.empty()) return;
  std::vector<PortTraffic> out;
  out.reserve(taken.size());
  for (auto& [key, t] : taken) out.push_back(std::move(t));
  options_.meter(out);
}

void Relay::EndUnreachable(const std::vector<std::shared_ptr<DataChannel>>& channels) {
  if (!options_.unreachable) return;
  std::vector<std::string> workloads;
  for (const auto& c : channels) {
    for (std::string& w : c->Workloads()) workloads.push_back(std::move(w));
  }
  if (workloads.empty()) return;
  auto gone = options_.unreachable(workloads);
  if (!gone.ok()) {
    LogWarn("relay.check_failed", {{"error", gone.status().ToString()}});
    return;
  }
  if (gone->empty()) return;
  const std::set<std::string> ended(gone->begin(), gone->end());
  for (const auto& c : channels) c->EndWorkloads(ended);
  // An ended rental's figures leave /metrics (its totals stay on the rental).
  MutexLock lock(&shared_->traffic_mu);
  for (const std::string& workload : ended) {
    auto it = shared_->rental_of_workload.find(workload);
    if (it == shared_->rental_of_workload.end()) continue;
    std::erase_if(shared_->totals, [&](const auto& kv) { return kv.first.first == it->second; });
    shared_->rental_of_workload.erase(it);
  }
}

std::shared_ptr<http::WebSocketSession> Relay::Attach(
    const std::string& machine_id, std::shared_ptr<http::WebSocketConnection> ws) {
  auto channel = std::make_shared<DataChannel>(machine_id, ws, options_, shared_);
  std::shared_ptr<DataChannel> old;
  {
    MutexLock lock(&shared_->mu);
    auto& slot = shared_->channels[machine_id];
    old = std::move(slot);
    slot = channel;
  }
  if (old) old->Shutdown(4000, "replaced by a newer data channel of the machine");
  LogInfo("relay.channel_open", {{"machine_id", machine_id}, {"remote", ws->RemoteAddr()}});
  if (options_.holding) options_.holding(machine_id, true);
  channel->Tick();  // the first ping
  return std::make_shared<ChannelSession>(std::move(channel), std::move(ws));
}

StatusOr<std::unique_ptr<Stream>> Relay::OpenHere(const std::string& machine_id,
                                                  const StreamTarget& target,
                                                  std::weak_ptr<StreamSink> sink,
                                                  const std::string& rental_id) {
  std::shared_ptr<DataChannel> channel;
  {
    MutexLock lock(&shared_->mu);
    auto it = shared_->channels.find(machine_id);
    if (it != shared_->channels.end()) channel = it->second;
  }
  if (!channel) return Unavailable("the machine's agent has no data channel open");
  GPUNEX_ASSIGN_OR_RETURN(uint32_t id,
                          channel->Open(machine_id, target, std::move(sink), rental_id));
  return std::make_unique<Stream>(std::move(channel), id);
}

StatusOr<std::unique_ptr<Stream>> Relay::Open(const std::string& machine_id,
                                              const StreamTarget& target,
                                              std::weak_ptr<StreamSink> sink,
                                              const std::string& rental_id) {
  if (!options_.route || Connected(machine_id)) {
    return OpenHere(machine_id, target, std::move(sink), rental_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(std::optional<PeerRoute> route, options_.route(machine_id));
  if (!route) return Unavailable("the machine's agent is not connected");
  GPUNEX_ASSIGN_OR_RETURN(std::shared_ptr<DataChannel> peer, PeerChannel(*route));
  GPUNEX_ASSIGN_OR_RETURN(uint32_t id, peer->Open(machine_id, target, std::move(sink), rental_id));
  return std::make_unique<Stream>(std::move(peer), id);
}

StatusOr<std::shared_ptr<DataChannel>> Relay::PeerChannel(const PeerRoute& route) {
  {
    MutexLock lock(&shared_->mu);
    auto it = shared_->peers.find(route.instance_id);
    if (it != shared_->peers.end()) return it->second;
  }
  auto link = PeerLink::Connect(route);
  if (!link.ok()) {
    LogWarn("relay.peer_unreachable",
            {{"instance_id", route.instance_id}, {"error", link.status().ToString()}});
    return Unavailable("the instance that holds the machine's agent cannot be reached");
  }
  auto channel = std::make_shared<DataChannel>(route.instance_id, *link, options_, shared_,
                                               /*peer=*/true);
  {
    MutexLock lock(&shared_->mu);
    if (shared_->stopping) return Unavailable("the platform is stopping");
    auto& slot = shared_->peers[route.instance_id];
    // Another open connected first: its channel serves (this connection closes unused).
    if (slot) return slot;
    slot = channel;
    shared_->links.push_back(*link);
  }
  LogInfo("relay.peer_open", {{"instance_id", route.instance_id}, {"url", route.url}});
  (*link)->Start(std::make_shared<ChannelSession>(channel, *link));
  channel->Tick();  // the first ping
  return channel;
}

std::shared_ptr<http::WebSocketSession> Relay::AttachPeer(
    std::shared_ptr<http::WebSocketConnection> ws) {
  LogInfo("relay.peer_attached", {{"remote", ws->RemoteAddr()}});
  return ServePeer(*this, std::move(ws), options_.mux);
}

std::vector<std::string> Relay::Machines() const {
  MutexLock lock(&shared_->mu);
  std::vector<std::string> out;
  out.reserve(shared_->channels.size());
  for (const auto& [machine, channel] : shared_->channels) out.push_back(machine);
  return out;
}

StatusOr<std::unique_ptr<http::Upstream>> Relay::OpenUpstream(
    const std::string& machine_id, const StreamTarget& target,
    std::weak_ptr<http::UpstreamSink> sink, const std::string& rental_id) {
  auto adapter = std::make_shared<UpstreamAdapter>(
      std::move(sink), target.kind == StreamTarget::Kind::kFiles
                           ? std::string("the container's files")
                           : "port " + std::to_string(target.port) + " of the container");
  GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                          Open(machine_id, target, std::weak_ptr<StreamSink>(adapter), rental_id));
  return std::unique_ptr<http::Upstream>(
      std::make_unique<RelayUpstream>(std::move(adapter), std::move(stream)));
}

bool Relay::Connected(const std::string& machine_id) const {
  MutexLock lock(&shared_->mu);
  return shared_->channels.contains(machine_id);
}

RelayFigures Relay::Figures() const {
  std::vector<std::shared_ptr<DataChannel>> channels;
  {
    MutexLock lock(&shared_->mu);
    for (auto& [machine, channel] : shared_->channels) channels.push_back(channel);
  }
  RelayFigures f;
  f.channels = static_cast<int64_t>(channels.size());
  {
    MutexLock lock(&shared_->mu);
    f.peer_links = static_cast<int64_t>(shared_->peers.size());
  }
  for (auto& c : channels) f.streams += static_cast<int64_t>(c->open_streams());
  f.bytes_to_agents = shared_->bytes_to_agents.load();
  f.bytes_from_agents = shared_->bytes_from_agents.load();
  MutexLock lock(&shared_->traffic_mu);
  for (const auto& [key, t] : shared_->totals) f.ports.push_back(t);
  return f;
}

}  // namespace gpunex::platform::relay
