#include "agent/link/data_link.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "common/event_fd.h"
#include "common/log.h"

namespace gpunex::agent {
namespace {

using Clock = std::chrono::steady_clock;

// What one read of a port's socket takes at most (the session cuts it into frames).
constexpr size_t kReadChunk = 256 * 1024;
// How long the loop sleeps at most: the mux's pings run on time.
constexpr int kIdlePollMs = 200;

// The mux's word for why a dial failed.
mux::Code CodeOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kPermissionDenied:
    case StatusCode::kInvalidArgument:
      return mux::Code::kRefused;
    case StatusCode::kNotFound:
      return mux::Code::kGone;
    case StatusCode::kUnavailable:
      return mux::Code::kUnreachable;
    case StatusCode::kResourceExhausted:
      return mux::Code::kLimit;
    default:
      return mux::Code::kInternal;
  }
}

}  // namespace

// One Serve(): the mux session and the streams' sockets.
class DataLink::Loop {
 public:
  Loop(DataLink& link, net::WebSocketClient& client)
      : link_(link),
        client_(client),
        session_(mux::Session::Role::kResponder, link.options_.mux, Clock::now()) {}

  Status Run() {
    // The client wakes the loop when a message arrives, when its send queue has drained
    // to half of what the loop lets wait there, and when the connection closes.
    client_.NotifyOn(link_.wake_fd_, link_.options_.max_queued / 2,
                     link_.options_.max_queued_messages / 2);
    Status result = Loop::Serve();
    client_.NotifyOn(-1, 0, 0);
    for (auto& [id, c] : conns_) CloseConn(c);
    conns_.clear();
    for (auto& late : abandoned_) {
      StatusOr<int> fd = late.get();  // waits for the dial to end
      if (fd.ok()) close(*fd);
    }
    link_.open_streams_ = 0;
    return result;
  }

 private:
  struct Conn {
    int fd = -1;
    std::future<StatusOr<int>> dialing;  // until the dial ends
    std::string to_mux;                  // from the socket, not yet taken by the mux
    bool socket_full = false;            // the platform's bytes wait for the socket's room
    bool mux_finished = false;           // the platform sends no more
    bool shut_wr = false;                // the socket was told so
    bool socket_eof = false;             // the socket sends no more (a FIN went out)
    bool peer_gone = false;              // writing failed: the platform's bytes are dropped
  };

  Status Serve() {
    while (!link_.stop_.load()) {
      // Every message that waits (the client signals only when its inbox was empty).
      const auto now = Clock::now();
      for (;;) {
        StatusOr<std::optional<std::string>> m = client_.Receive(std::chrono::milliseconds(0));
        if (!m.ok()) return m.status();  // closed, after every message it had
        if (!m->has_value()) break;
        if (Status st = session_.Receive(std::move(**m), now); !st.ok()) {
          LogWarn("agent.data.protocol_error", {{"error", st.message()}});
          (void)Pump().status();  // the go-away saying why
          return st;
        }
      }
      FinishDials();
      // Sending frees the streams' send buffers (writable events), which lets a socket's
      // waiting bytes in, which makes frames to send: round again while that moves.
      for (int pass = 0; pass < 8; ++pass) {
        HandleEvents();
        for (auto it = conns_.begin(); it != conns_.end();) {
          it = Service(it->first, it->second) ? std::next(it) : Erase(it);
        }
        HandleEvents();  // what servicing made (closes)
        GPUNEX_ASSIGN_OR_RETURN(size_t sent, Pump());
        if (sent == 0 || !AnyWaitingForRoom()) break;
      }
      link_.open_streams_ = static_cast<int>(conns_.size());
      PollOnce();
    }
    session_.GoAway(mux::Code::kShutdown, "the agent is stopping");
    (void)Pump().status();
    return Status::Ok();
  }

  void HandleEvents() {
    for (mux::Event& e : session_.TakeEvents()) {
      switch (e.kind) {
        case mux::Event::Kind::kIncoming:
          Incoming(e.stream, e.data);
          break;
        case mux::Event::Kind::kFinished:
          if (auto it = conns_.find(e.stream); it != conns_.end()) it->second.mux_finished = true;
          break;
        case mux::Event::Kind::kReset:
          if (auto it = conns_.find(e.stream); it != conns_.end()) Erase(it);
          break;
        case mux::Event::Kind::kClosed:
          // Both ways finished, and every byte of the platform's is in the socket (the
          // session closes a stream only once it has all been consumed).
          if (auto it = conns_.find(e.stream); it != conns_.end()) Erase(it);
          break;
        default:  // readable, writable: the next service pass looks
          break;
      }
    }
  }

  void Incoming(uint32_t id, const std::string& payload) {
    auto target = ParseStreamTarget(payload);
    if (!target.ok()) {
      (void)session_.Refuse(id, mux::Code::kRefused, target.status().message());
      return;
    }
    Conn& c = conns_[id];
    c.dialing = std::async(std::launch::async,
                           [dialer = link_.dialer_, t = *target, wake = link_.wake_fd_] {
                             StatusOr<int> fd = dialer(t);
                             SignalEventFd(wake);
                             return fd;
                           });
  }

  void FinishDials() {
    for (auto it = abandoned_.begin(); it != abandoned_.end();) {
      if (it->wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        ++it;
        continue;
      }
      StatusOr<int> fd = it->get();
      if (fd.ok()) close(*fd);
      it = abandoned_.erase(it);
    }
    for (auto it = conns_.begin(); it != conns_.end();) {
      Conn& c = it->second;
      if (!c.dialing.valid() ||
          c.dialing.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        ++it;
        continue;
      }
      StatusOr<int> fd = c.dialing.get();
      if (fd.ok()) {
        c.fd = *fd;
        (void)session_.Accept(it->first);
        ++it;
      } else {
        LogInfo("agent.data.stream_refused",
                {{"stream", it->first}, {"error", fd.status().message()}});
        (void)session_.Refuse(it->first, CodeOf(fd.status()), fd.status().message());
        it = conns_.erase(it);
      }
    }
  }

  // Moves what can move for one connected stream; false when it is over (reset).
  bool Service(uint32_t id, Conn& c) {
    if (c.fd < 0) return true;  // still dialing
    const auto now = Clock::now();
    // The platform's bytes go from the session straight into the socket, until the socket
    // is full (POLLOUT wakes the loop then) or none wait (a frame's arrival wakes it).
    c.socket_full = false;
    for (std::string_view next; !(next = session_.Peek(id)).empty();) {
      if (c.peer_gone) {
        (void)session_.Consume(id, next.size(), now);
        continue;
      }
      const ssize_t n = send(c.fd, next.data(), next.size(), MSG_NOSIGNAL);
      if (n > 0) {
        (void)session_.Consume(id, static_cast<size_t>(n), now);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        c.socket_full = true;
        break;
      } else if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
        // The far end closed while the platform still wrote (a command that ended
        // before its stdin's end arrived): what it sent before closing is still to be
        // read and passed on, so the stream ends when the socket's end is read, and the
        // platform's bytes are dropped until then.
        c.peer_gone = true;
      } else {
        session_.Reset(id, mux::Code::kUnreachable,
                       std::string("the port's connection failed: ") + std::strerror(errno));
        return false;
      }
    }
    // The platform's end of file, once every byte before it is in the socket.
    if (!c.socket_full && c.mux_finished && !c.shut_wr && !c.peer_gone) {
      shutdown(c.fd, SHUT_WR);
      c.shut_wr = true;
    }
    if (!c.to_mux.empty()) {
      auto n = session_.Write(id, c.to_mux);
      if (n.ok()) c.to_mux.erase(0, *n);
    }
    return true;
  }

  // Reads the sockets that have something, and waits for the next thing to do.
  void PollOnce() {
    std::vector<pollfd> fds;
    std::vector<uint32_t> ids;
    fds.push_back({link_.wake_fd_, POLLIN, 0});
    for (auto& [id, c] : conns_) {
      if (c.fd < 0) continue;
      short events = 0;
      if (c.socket_full) events |= POLLOUT;
      if (!c.socket_eof && c.to_mux.empty()) events |= POLLIN;
      // A socket with nothing wanted is left out, so that a hang-up does not spin.
      fds.push_back({events != 0 ? c.fd : -1, events, 0});
      ids.push_back(id);
    }
    // A full WebSocket queue wakes the loop when it drains (NotifyOn).
    const int ready = poll(fds.data(), fds.size(), kIdlePollMs);
    if (ready <= 0) return;
    if (fds[0].revents != 0) ClearEventFd(link_.wake_fd_);
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      if ((fds[i].events & POLLIN) == 0) continue;  // POLLOUT's errors show on the send
      auto it = conns_.find(ids[i - 1]);
      if (it == conns_.end()) continue;
      ReadSocket(it);
    }
  }

  void ReadSocket(std::map<uint32_t, Conn>::iterator it) {
    Conn& c = it->second;
    const ssize_t n = recv(c.fd, read_buffer_.get(), kReadChunk, 0);
    if (n > 0) {
      const std::string_view got(read_buffer_.get(), static_cast<size_t>(n));
      auto taken = session_.Write(it->first, got);
      const size_t t = taken.ok() ? *taken : got.size();  // a finished stream drops it
      if (t < got.size()) c.to_mux = got.substr(t);
    } else if (n == 0) {
      c.socket_eof = true;
      (void)session_.Finish(it->first);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      session_.Reset(it->first, mux::Code::kUnreachable,
                     std::string("the port's connection failed: ") + std::strerror(errno));
      Erase(it);
    }
  }

  // Sends what may go while the WebSocket keeps up; how many frames went.
  StatusOr<size_t> Pump() {
    const auto now = Clock::now();
    size_t sent = 0;
    while (Room()) {
      std::optional<std::string> m = session_.NextMessage(now);
      if (!m) break;
      GPUNEX_RETURN_IF_ERROR(client_.Send(std::move(*m)));
      ++sent;
    }
    return sent;
  }

  // Whether the WebSocket's queue takes more frames now.
  bool Room() {
    return client_.QueuedBytes() < link_.options_.max_queued &&
           client_.QueuedMessages() < link_.options_.max_queued_messages;
  }

  // Whether a stream holds bytes of its socket that its send buffer did not take.
  bool AnyWaitingForRoom() const {
    for (const auto& [id, c] : conns_) {
      if (!c.to_mux.empty()) return true;
    }
    return false;
  }

  std::map<uint32_t, Conn>::iterator Erase(std::map<uint32_t, Conn>::iterator it) {
    CloseConn(it->second);
    return conns_.erase(it);
  }

  // Closes its socket; a dial still running is left to end on its own (its socket, if
  // any, is closed then).
  void CloseConn(Conn& c) {
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
    if (c.dialing.valid()) abandoned_.push_back(std::move(c.dialing));
  }

  DataLink& link_;
  net::WebSocketClient& client_;
  mux::Session session_;
  std::map<uint32_t, Conn> conns_;
  std::vector<std::future<StatusOr<int>>> abandoned_;
  // Where sockets are read into, before the session takes the bytes.
  const std::unique_ptr<char[]> read_buffer_ = std::make_unique<char[]>(kReadChunk);
};

DataLink::DataLink(StreamDialer dialer, DataLinkOptions options)
    : dialer_(std::move(dialer)), options_(options) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

DataLink::~DataLink() {
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status DataLink::Serve(net::WebSocketClient& client) {
  if (wake_fd_ < 0) return Internal(std::string("eventfd: ") + std::strerror(errno));
  Loop loop(*this, client);
  return loop.Run();
}

void DataLink::Stop() {
  stop_ = true;
  if (wake_fd_ >= 0) SignalEventFd(wake_fd_);
}

}  // namespace gpunex::agent
