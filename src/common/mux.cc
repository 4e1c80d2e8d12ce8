#include "common/mux.h"

#include <algorithm>
#include <utility>

#include "common/utf8.h"

namespace gpunex::mux {
namespace {

void PutU16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v & 0xFF));
}

void PutU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((v >> shift) & 0xFF));
}

uint32_t GetU32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

uint16_t GetU16(std::string_view s, size_t at) {
  return static_cast<uint16_t>((static_cast<unsigned char>(s[at]) << 8) |
                               static_cast<unsigned char>(s[at + 1]));
}

// The 8-byte header: type, flags (0), reserved (0), the stream id big-endian.
void WriteHeader(FrameType type, uint32_t stream, char* at) {
  at[0] = static_cast<char>(type);
  at[1] = at[2] = at[3] = 0;
  for (int i = 0; i < 4; ++i) at[4 + i] = static_cast<char>((stream >> (24 - 8 * i)) & 0xFF);
}

bool ValidUtf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    if (NextCodePoint(s, &pos) == kInvalidUtf8) return false;
  }
  return true;
}

bool OnStreamZero(FrameType t) {
  return t == FrameType::kPing || t == FrameType::kPong || t == FrameType::kGoAway;
}

bool CarriesCode(FrameType t) {
  return t == FrameType::kRefuse || t == FrameType::kReset || t == FrameType::kGoAway;
}

std::string PingBytes(uint64_t seq) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(seq >> 32));
  PutU32(&out, static_cast<uint32_t>(seq));
  return out;
}

}  // namespace

Frame MakeFrame(FrameType type, uint32_t stream, std::string payload, Code code) {
  Frame f;
  f.type = type;
  f.stream = stream;
  f.payload = std::move(payload);
  f.code = code;
  return f;
}

Frame WindowFrame(uint32_t stream, uint32_t increment) {
  Frame f;
  f.type = FrameType::kWindow;
  f.stream = stream;
  f.increment = increment;
  return f;
}

std::string Encode(const Frame& f) {
  std::string out;
  out.reserve(kHeaderBytes + f.payload.size() + 4);
  out.resize(kHeaderBytes);
  WriteHeader(f.type, f.stream, out.data());
  if (f.type == FrameType::kWindow) {
    PutU32(&out, f.increment);
  } else if (CarriesCode(f.type)) {
    PutU16(&out, static_cast<uint16_t>(f.code));
    out += f.payload;
  } else {
    out += f.payload;
  }
  return out;
}

// A frame whose payload still lies in the message it came in (Session::Receive keeps
// only what it must: a data frame is kept whole, as the message it came in).
struct FrameView {
  FrameType type = FrameType::kData;
  uint32_t stream = 0;
  std::string_view payload;
  uint32_t increment = 0;
  Code code = Code::kCancelled;
};

namespace {

StatusOr<FrameView> DecodeView(std::string_view m) {
  if (m.size() < kHeaderBytes) {
    return InvalidArgument("a frame of " + std::to_string(m.size()) +
                           " bytes is shorter than its 8-byte header");
  }
  const auto type = static_cast<uint8_t>(m[0]);
  if (type < 1 || type > 10) return InvalidArgument("unknown frame type " + std::to_string(type));
  FrameView f;
  f.type = static_cast<FrameType>(type);
  const std::string name(kFrameTypeNames.Name(f.type));
  if (m[1] != 0 || m[2] != 0 || m[3] != 0) {
    return InvalidArgument(name + " frame: flags and reserved bytes must be 0");
  }
  f.stream = GetU32(m, 4);
  if (OnStreamZero(f.type) != (f.stream == 0)) {
    return InvalidArgument(name + (f.stream == 0 ? " frame on stream 0" : " frame on a stream"));
  }
  std::string_view body = m.substr(kHeaderBytes);
  switch (f.type) {
    case FrameType::kOpen:
      if (body.empty() || body.size() > kMaxTargetBytes) {
        return InvalidArgument("open frame: the target must be 1 to " +
                               std::to_string(kMaxTargetBytes) + " bytes");
      }
      f.payload = body;
      break;
    case FrameType::kAccept:
    case FrameType::kFin:
      if (!body.empty()) return InvalidArgument(name + " frame: carries no payload");
      break;
    case FrameType::kRefuse:
    case FrameType::kReset:
    case FrameType::kGoAway: {
      if (body.size() < 2) return InvalidArgument(name + " frame: no code");
      const auto code = GetU16(body, 0);
      if (code < 1 || code > 8)
        return InvalidArgument(name + " frame: unknown code " + std::to_string(code));
      f.code = static_cast<Code>(code);
      body.remove_prefix(2);
      if (body.size() > kMaxReasonBytes || !ValidUtf8(body)) {
        return InvalidArgument(name + " frame: the reason must be UTF-8 of at most " +
                               std::to_string(kMaxReasonBytes) + " bytes");
      }
      f.payload = body;
      break;
    }
    case FrameType::kData:
      if (body.empty() || body.size() > kMaxDataBytes) {
        return InvalidArgument("data frame: carries 1 to " + std::to_string(kMaxDataBytes) +
                               " bytes");
      }
      f.payload = body;
      break;
    case FrameType::kWindow:
      if (body.size() != 4) return InvalidArgument("window frame: the increment is 4 bytes");
      f.increment = GetU32(body, 0);
      if (f.increment == 0 || f.increment > kMaxWindow) {
        return InvalidArgument("window frame: the increment must be 1 to " +
                               std::to_string(kMaxWindow));
      }
      break;
    case FrameType::kPing:
    case FrameType::kPong:
      if (body.size() != 8) return InvalidArgument(name + " frame: carries 8 bytes");
      f.payload = body;
      break;
  }
  return f;
}

}  // namespace

StatusOr<Frame> Decode(std::string_view m) {
  GPUNEX_ASSIGN_OR_RETURN(FrameView v, DecodeView(m));
  Frame f;
  f.type = v.type;
  f.stream = v.stream;
  f.payload = v.payload;
  f.increment = v.increment;
  f.code = v.code;
  return f;
}

// --------------------------------------------------------------------------- Session

namespace {
// Pongs owed to the peer before its pings count as a flood.
constexpr size_t kMaxPongsDue = 64;
}  // namespace

Session::Session(Role role, Options options, TimePoint now)
    : role_(role), options_(options), next_id_(role == Role::kInitiator ? 1 : 2), next_ping_(now) {
  options_.max_chunk = std::clamp<uint32_t>(options_.max_chunk, 1, kMaxDataBytes);
  options_.max_stream_window =
      std::clamp<uint32_t>(options_.max_stream_window, kInitialWindow, kMaxWindow);
  options_.connection_window = std::max<uint64_t>(options_.connection_window, kInitialWindow);
  options_.send_buffer = std::max<size_t>(options_.send_buffer, 1);
}

Status Session::Violation(std::string what) {
  if (!sent_go_away_) {
    Queue(MakeFrame(FrameType::kGoAway, 0, what.substr(0, kMaxReasonBytes), Code::kProtocol));
    sent_go_away_ = true;
  }
  return FailedPrecondition("data channel protocol: " + what);
}

void Session::Queue(Frame f) { control_.push_back(Encode(f)); }

void Session::Emit(Event::Kind kind, uint32_t stream, Code code, std::string data) {
  events_.push_back(Event{kind, stream, code, std::move(data)});
}

std::vector<Event> Session::TakeEvents() { return std::exchange(events_, {}); }

uint32_t Session::receive_window(uint32_t stream) const {
  auto it = streams_.find(stream);
  return it == streams_.end() ? 0 : it->second.window;
}

void Session::Drop(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  buffered_received_ -= s.received_bytes;
  buffered_to_send_ -= s.to_send_bytes;
  reserved_window_ -= s.window;
  streams_.erase(it);
  // ready_ skips ids that are gone; in_ready_ must forget it, so that an id is never
  // counted as queued when it is not.
  in_ready_.erase(id);
}

void Session::MaybeClose(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  const Stream& s = it->second;
  if (s.fin_sent && s.fin_received && s.received_bytes == 0) {
    Drop(id);
    Emit(Event::Kind::kClosed, id);
  }
}

bool Session::HasData(const Stream& s) const {
  if (s.phase != Phase::kOpen || s.fin_sent) return false;
  if (!s.to_send.empty()) return s.send_credit > 0;
  return s.fin_wanted;
}

// ----------------------------------------------------------------- receiving

Status Session::Receive(std::string message, TimePoint now) {
  auto f = DecodeView(message);
  if (!f.ok()) return Violation(f.status().message());
  if (f->type == FrameType::kData) return ReceiveData(f->stream, std::move(message));
  return ReceiveFrame(*f, now);
}

Status Session::ReceiveData(uint32_t id, std::string message) {
  auto it = streams_.find(id);
  if (it == streams_.end()) {
    // A stream this side reset or refused: what the peer sent before it knew is dropped.
    return Status::Ok();
  }
  Stream& s = it->second;
  const size_t n = message.size() - kHeaderBytes;
  auto broken = [&](const char* why) {
    return Violation("stream " + std::to_string(id) + ": " + why);
  };
  if (s.phase != Phase::kOpen) return broken("data before the stream opened");
  if (s.fin_received) return broken("data after its fin");
  if (s.bytes_received + n > s.credit_given) return broken("data past the receive window");
  s.bytes_received += n;
  const bool was_empty = s.received_bytes == 0;
  // The message itself is kept (its bytes after the header): nothing is copied.
  if (s.received.empty()) s.received_at = kHeaderBytes;
  s.received.push_back(std::move(message));
  s.received_bytes += n;
  buffered_received_ += n;
  if (was_empty) Emit(Event::Kind::kReadable, id);
  return Status::Ok();
}

Status Session::ReceiveFrame(const FrameView& f, TimePoint now) {
  switch (f.type) {
    case FrameType::kPing:
      if (++pongs_due_ > kMaxPongsDue) return Violation("pings faster than pongs can go");
      Queue(MakeFrame(FrameType::kPong, 0, std::string(f.payload)));
      return Status::Ok();
    case FrameType::kPong:
      if (ping_out_ && f.payload == PingBytes(ping_out_->first)) {
        const auto sample =
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - ping_out_->second);
        srtt_ = srtt_.count() == 0 ? sample : (srtt_ * 7 + sample) / 8;
        ping_out_.reset();
      }
      return Status::Ok();
    case FrameType::kGoAway:
      received_go_away_ = true;
      return Status::Ok();
    case FrameType::kOpen: {
      const bool peer_parity = (f.stream % 2 == 1) == (role_ == Role::kResponder);
      if (!peer_parity)
        return Violation("open of stream " + std::to_string(f.stream) + ": not the peer's to open");
      if (f.stream <= highest_peer_id_) {
        return Violation("open of stream " + std::to_string(f.stream) + ": ids must grow");
      }
      highest_peer_id_ = f.stream;
      if (sent_go_away_) {
        Queue(MakeFrame(FrameType::kRefuse, f.stream, "going away", Code::kShutdown));
        return Status::Ok();
      }
      if (streams_.size() >= options_.max_streams ||
          reserved_window_ + kInitialWindow > options_.connection_window) {
        if (control_.size() > options_.max_streams + 1024) {
          return Violation("opens faster than their refusals can go");
        }
        Queue(MakeFrame(FrameType::kRefuse, f.stream, "too many streams on this connection",
                        Code::kLimit));
        return Status::Ok();
      }
      Stream& s = streams_[f.stream];
      s.phase = Phase::kIncoming;
      s.window = kInitialWindow;
      s.credit_given = kInitialWindow;
      s.send_credit = kInitialWindow;
      s.last_credit = now;
      reserved_window_ += kInitialWindow;
      Emit(Event::Kind::kIncoming, f.stream, Code::kCancelled, std::string(f.payload));
      return Status::Ok();
    }
    default:
      break;
  }
  auto it = streams_.find(f.stream);
  if (it == streams_.end()) {
    // A stream this side reset or refused: what the peer sent before it knew is dropped.
    return Status::Ok();
  }
  Stream& s = it->second;
  const std::string which = "stream " + std::to_string(f.stream);
  switch (f.type) {
    case FrameType::kAccept:
      if (s.phase != Phase::kOpening) return Violation(which + " accepted twice or by its opener");
      s.phase = Phase::kOpen;
      Emit(Event::Kind::kAccepted, f.stream);
      if (HasData(s) && in_ready_.insert(f.stream).second) ready_.push_back(f.stream);
      return Status::Ok();
    case FrameType::kRefuse:
      if (s.phase != Phase::kOpening) return Violation(which + " refused after it opened");
      Drop(f.stream);
      Emit(Event::Kind::kRefused, f.stream, f.code, std::string(f.payload));
      return Status::Ok();
    case FrameType::kWindow:
      s.send_credit += f.increment;
      if (s.send_credit > 2ull * kMaxWindow) return Violation(which + ": credit past 2^31 bytes");
      if (HasData(s) && in_ready_.insert(f.stream).second) ready_.push_back(f.stream);
      return Status::Ok();
    case FrameType::kFin:
      if (s.phase != Phase::kOpen) return Violation(which + ": fin before the stream opened");
      if (s.fin_received) return Violation(which + ": a second fin");
      s.fin_received = true;
      Emit(Event::Kind::kFinished, f.stream);
      MaybeClose(f.stream);
      return Status::Ok();
    case FrameType::kReset:
      Drop(f.stream);
      Emit(Event::Kind::kReset, f.stream, f.code, std::string(f.payload));
      return Status::Ok();
    default:
      return Violation("unexpected " + std::string(kFrameTypeNames.Name(f.type)) + " frame");
  }
}

// ----------------------------------------------------------------- sending

bool Session::WantsToSend() const {
  if (!control_.empty()) return true;
  for (uint32_t id : ready_) {
    auto it = streams_.find(id);
    if (it != streams_.end() && HasData(it->second)) return true;
  }
  return false;
}

std::optional<std::string> Session::NextMessage(TimePoint now) {
  if (!ping_out_ && now >= next_ping_ && !sent_go_away_) {
    ping_out_ = {++ping_seq_, now};
    next_ping_ = now + options_.ping_every;
    Queue(MakeFrame(FrameType::kPing, 0, PingBytes(ping_seq_)));
  }
  if (!control_.empty()) {
    std::string m = std::move(control_.front());
    control_.pop_front();
    if (static_cast<FrameType>(m[0]) == FrameType::kPong) --pongs_due_;
    return m;
  }
  return NextData();
}

std::optional<std::string> Session::NextData() {
  while (!ready_.empty()) {
    const uint32_t id = ready_.front();
    ready_.pop_front();
    auto it = streams_.find(id);
    if (it == streams_.end()) continue;
    in_ready_.erase(id);
    Stream& s = it->second;
    if (!HasData(s)) continue;
    if (s.to_send.empty()) {  // Finish was called and every byte went
      s.fin_sent = true;
      std::string m = Encode(MakeFrame(FrameType::kFin, id));
      MaybeClose(id);
      return m;
    }
    std::string& front = s.to_send.front();  // header room, then the bytes
    const size_t waiting = front.size() - kHeaderBytes;
    const size_t n = std::min<uint64_t>({waiting, options_.max_chunk, s.send_credit});
    std::string m;
    if (n == waiting) {
      m = std::move(front);
      s.to_send.pop_front();
    } else {
      m.reserve(kHeaderBytes + n);
      m.append(kHeaderBytes, '\0');
      m.append(front, kHeaderBytes, n);
      front.erase(kHeaderBytes, n);
    }
    WriteHeader(FrameType::kData, id, m.data());
    s.to_send_bytes -= n;
    buffered_to_send_ -= n;
    s.send_credit -= n;
    if (s.writer_blocked && s.to_send_bytes <= options_.send_buffer / 2) {
      s.writer_blocked = false;
      Emit(Event::Kind::kWritable, id);
    }
    if (HasData(s)) {
      ready_.push_back(id);
      in_ready_.insert(id);
    }
    return m;
  }
  return std::nullopt;
}

// ----------------------------------------------------------------- the application's calls

StatusOr<uint32_t> Session::Open(std::string_view target) {
  if (target.empty() || target.size() > kMaxTargetBytes) {
    return InvalidArgument("a stream's target must be 1 to " + std::to_string(kMaxTargetBytes) +
                           " bytes");
  }
  if (going_away()) return FailedPrecondition("the data channel is going away");
  if (streams_.size() >= options_.max_streams ||
      reserved_window_ + kInitialWindow > options_.connection_window) {
    return ResourceExhausted("too many streams on this data channel");
  }
  if (next_id_ > 0xFFFFFFFD) return ResourceExhausted("stream ids of this data channel ran out");
  const uint32_t id = next_id_;
  next_id_ += 2;
  Stream& s = streams_[id];
  s.phase = Phase::kOpening;
  s.window = kInitialWindow;
  s.credit_given = kInitialWindow;
  s.send_credit = kInitialWindow;
  reserved_window_ += kInitialWindow;
  Queue(MakeFrame(FrameType::kOpen, id, std::string(target)));
  return id;
}

Status Session::Accept(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second.phase != Phase::kIncoming) {
    return FailedPrecondition("stream " + std::to_string(id) + " is not waiting to be accepted");
  }
  it->second.phase = Phase::kOpen;
  Queue(MakeFrame(FrameType::kAccept, id));
  return Status::Ok();
}

Status Session::Refuse(uint32_t id, Code code, std::string_view reason) {
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second.phase != Phase::kIncoming) {
    return FailedPrecondition("stream " + std::to_string(id) + " is not waiting to be accepted");
  }
  Drop(id);
  Queue(MakeFrame(FrameType::kRefuse, id, std::string(reason.substr(0, kMaxReasonBytes)), code));
  return Status::Ok();
}

StatusOr<size_t> Session::Write(uint32_t id, std::string_view data) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return FailedPrecondition("stream " + std::to_string(id) + " is gone");
  Stream& s = it->second;
  if (s.phase == Phase::kIncoming || s.fin_wanted) {
    return FailedPrecondition("stream " + std::to_string(id) + " takes no writes");
  }
  const size_t room = options_.send_buffer - std::min(options_.send_buffer, s.to_send_bytes);
  const size_t n = std::min(room, data.size());
  if (n < data.size()) s.writer_blocked = true;
  if (n == 0) return n;
  // Pieces of at most a chunk, so that the scheduler cuts nothing larger, each after room
  // for its frame's header: a piece that goes whole is sent without another copy.
  for (size_t at = 0; at < n; at += options_.max_chunk) {
    const std::string_view piece = data.substr(at, std::min<size_t>(options_.max_chunk, n - at));
    std::string& chunk = s.to_send.emplace_back();
    chunk.reserve(kHeaderBytes + piece.size());
    chunk.append(kHeaderBytes, '\0');
    chunk.append(piece);
  }
  s.to_send_bytes += n;
  buffered_to_send_ += n;
  if (HasData(s) && in_ready_.insert(id).second) ready_.push_back(id);
  return n;
}

Status Session::Finish(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return FailedPrecondition("stream " + std::to_string(id) + " is gone");
  Stream& s = it->second;
  if (s.phase == Phase::kIncoming) {
    return FailedPrecondition("stream " + std::to_string(id) + " is not accepted yet");
  }
  s.fin_wanted = true;
  if (HasData(s) && in_ready_.insert(id).second) ready_.push_back(id);
  return Status::Ok();
}

std::string_view Session::Peek(uint32_t id) const {
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second.received.empty()) return {};
  const Stream& s = it->second;
  return std::string_view(s.received.front()).substr(s.received_at);
}

Status Session::Consume(uint32_t id, size_t n, TimePoint now) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return FailedPrecondition("stream " + std::to_string(id) + " is gone");
  Stream& s = it->second;
  if (n > Peek(id).size()) {
    return InvalidArgument("stream " + std::to_string(id) + ": consumed past what Peek gave");
  }
  if (n == 0) return Status::Ok();
  s.received_at += n;
  if (s.received_at == s.received.front().size()) {
    s.received.pop_front();
    s.received_at = kHeaderBytes;
  }
  s.received_bytes -= n;
  buffered_received_ -= n;
  s.credit_pending += n;
  // Credit goes back once half the window was read (fewer, larger window frames), and
  // not at all once the peer sent its fin.
  if (!s.fin_received && s.credit_pending > 0 && s.credit_pending * 2 >= s.window) {
    uint64_t increment = s.credit_pending;
    // Read fast (credit due again within two round trips, or min_grow_interval): the
    // window is what limits the stream, so it doubles, as far as the connection's budget
    // allows.
    const auto soon = std::max<std::chrono::nanoseconds>(2 * srtt_, options_.min_grow_interval);
    if (now - s.last_credit < soon && s.window < options_.max_stream_window) {
      const uint64_t room = options_.connection_window - reserved_window_;
      const uint64_t grow =
          std::min<uint64_t>({s.window, options_.max_stream_window - s.window, room});
      s.window += static_cast<uint32_t>(grow);
      reserved_window_ += grow;
      increment += grow;
    }
    s.credit_given += increment;
    s.credit_pending = 0;
    s.last_credit = now;
    Queue(WindowFrame(id, static_cast<uint32_t>(increment)));
  }
  if (s.fin_received) MaybeClose(id);
  return Status::Ok();
}

StatusOr<std::string> Session::Read(uint32_t id, size_t max, TimePoint now) {
  if (!streams_.contains(id)) {
    return FailedPrecondition("stream " + std::to_string(id) + " is gone");
  }
  std::string out;
  while (out.size() < max) {
    const std::string_view next = Peek(id);
    if (next.empty()) break;
    const size_t n = std::min(max - out.size(), next.size());
    out.append(next.substr(0, n));
    GPUNEX_RETURN_IF_ERROR(Consume(id, n, now));
  }
  return out;
}

void Session::Reset(uint32_t id, Code code, std::string_view reason) {
  if (!streams_.contains(id)) return;
  Drop(id);
  Queue(MakeFrame(FrameType::kReset, id, std::string(reason.substr(0, kMaxReasonBytes)), code));
}

void Session::GoAway(Code code, std::string_view reason) {
  if (sent_go_away_) return;
  sent_go_away_ = true;
  Queue(MakeFrame(FrameType::kGoAway, 0, std::string(reason.substr(0, kMaxReasonBytes)), code));
}

}  // namespace gpunex::mux
