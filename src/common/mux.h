#ifndef GPUNEX_COMMON_MUX_H_
#define GPUNEX_COMMON_MUX_H_

// Many byte streams over one message connection: the agent's data channel (issue 25;
// docs/agent-protocol.md, "The data channel"), which carries the streams of rentals'
// ports and files between gpunexd and the agent, apart from the control channel.
//
// This is the protocol alone, without sockets or threads ("sans I/O"): a Session takes
// the messages that arrived (Receive) and gives the next message to send (NextMessage);
// the code around it owns the WebSocket and calls it from one strand. Time comes in as
// arguments, so that tests run it on a simulated link with its own clock.
//
// What it promises, whatever the peer does:
//   - Memory is bounded: a stream holds at most its receive window of received bytes
//     (the peer may not send more: a frame past it is a protocol error) and at most
//     Options::send_buffer of bytes waiting to go; all receive windows together stay
//     within Options::connection_window, so streams beyond it are refused.
//   - One slow reader never stalls the others: each stream has its own credit, and data
//     goes out in chunks of at most Options::max_chunk, one stream after the other.
//   - Windows grow toward bandwidth × round trip: when a stream's reader returns credit
//     sooner than two round trips (or Options::min_grow_interval) after the last time,
//     its window doubles (up to
//     Options::max_stream_window and what the connection's budget has left), so a long,
//     fast path is not capped by a fixed window.
//
// Thread-compatible: one Session is used from one thread (or strand) at a time.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "common/status.h"

namespace gpunex::mux {

using TimePoint = std::chrono::steady_clock::time_point;

// The kinds of frame; each message of the connection is one frame.
enum class FrameType : uint8_t {
  kOpen = 1,     // a new stream; the payload says what to reach (the application's words)
  kAccept = 2,   // the stream is open
  kRefuse = 3,   // the stream is not opened: code and reason
  kData = 4,     // bytes of the stream, within the receiver's credit
  kWindow = 5,   // more credit: a 32-bit increment
  kFin = 6,      // the sender sends no more data on the stream (half-close)
  kReset = 7,    // the stream ends at once in both directions: code and reason
  kPing = 8,     // stream 0: 8 opaque bytes, answered by a pong with the same bytes
  kPong = 9,     // stream 0
  kGoAway = 10,  // stream 0: the sender opens no more streams and takes no new ones
};
inline constexpr EnumNames<FrameType, 10> kFrameTypeNames{{{
    {FrameType::kOpen, "open"},
    {FrameType::kAccept, "accept"},
    {FrameType::kRefuse, "refuse"},
    {FrameType::kData, "data"},
    {FrameType::kWindow, "window"},
    {FrameType::kFin, "fin"},
    {FrameType::kReset, "reset"},
    {FrameType::kPing, "ping"},
    {FrameType::kPong, "pong"},
    {FrameType::kGoAway, "go_away"},
}}};

// Why a stream was refused or reset (and a go-away's reason).
enum class Code : uint16_t {
  kCancelled = 1,    // the side that opened or used it gave up
  kRefused = 2,      // not allowed: a port the rental did not declare, an unknown target
  kUnreachable = 3,  // allowed, but nothing answered there
  kLimit = 4,        // too many streams (the connection's, a rental's or a machine's cap)
  kGone = 5,         // the rental ended
  kInternal = 6,     // the side that says it failed
  kProtocol = 7,     // the peer broke these rules
  kShutdown = 8,     // the process is going away
};
inline constexpr EnumNames<Code, 8> kCodeNames{{{
    {Code::kCancelled, "cancelled"},
    {Code::kRefused, "refused"},
    {Code::kUnreachable, "unreachable"},
    {Code::kLimit, "limit"},
    {Code::kGone, "gone"},
    {Code::kInternal, "internal"},
    {Code::kProtocol, "protocol"},
    {Code::kShutdown, "shutdown"},
}}};

inline constexpr size_t kHeaderBytes = 8;
inline constexpr size_t kMaxTargetBytes = 4096;   // an open's payload
inline constexpr size_t kMaxReasonBytes = 1024;   // a refusal's, reset's or go-away's reason
inline constexpr size_t kMaxDataBytes = 65536;    // a data frame's payload
inline constexpr uint32_t kMaxWindow = 1u << 30;  // a window frame's increment at most
// Each stream's receive window when it opens, which both sides assume (part of the
// protocol, not an option).
inline constexpr uint32_t kInitialWindow = 32 * 1024;

struct Frame {
  FrameType type = FrameType::kData;
  uint32_t stream = 0;
  // kOpen: the target; kData: the bytes; kRefuse, kReset, kGoAway: the reason (UTF-8);
  // kPing, kPong: the 8 opaque bytes. Empty for the others.
  std::string payload;
  uint32_t increment = 0;        // kWindow
  Code code = Code::kCancelled;  // kRefuse, kReset, kGoAway

  bool operator==(const Frame&) const = default;
};

// A frame of `type` on `stream` carrying `payload` (and `code` where the type has one).
Frame MakeFrame(FrameType type, uint32_t stream, std::string payload = {},
                Code code = Code::kCancelled);
// A window frame.
Frame WindowFrame(uint32_t stream, uint32_t increment);

// The frame as its message: type (1 byte), flags (1 byte, 0), reserved (2 bytes, 0),
// stream id (4 bytes, big-endian), then the type's payload (docs/agent-protocol.md).
std::string Encode(const Frame& frame);
// A message as its frame; kInvalidArgument saying what is wrong (a message of the peer
// that does not decode is a protocol error that ends the connection).
StatusOr<Frame> Decode(std::string_view message);

struct Options {
  // A stream's window grows up to this: the largest receive buffer a stock Linux TCP
  // connection autotunes to is 6 MiB, a tuned one's 32 MiB; at 50 ms, 32 MiB carries
  // 670 MB/s (relay_bench: 16 MiB held a stream to half of that).
  uint32_t max_stream_window = 32u << 20;
  // All streams' receive windows together: the received bytes the session may hold
  // (each stream reserves kInitialWindow of it when it opens). Four streams at their
  // largest window.
  uint64_t connection_window = 128ull << 20;
  // Data frames carry at most this much, so that streams take turns in small steps
  // (64 KiB is 50 microseconds at 1.3 GB/s; relay_bench: 16 KiB frames cost a quarter of
  // the throughput in per-message work).
  uint32_t max_chunk = 64 * 1024;
  // Bytes a stream's writer may have waiting to be sent.
  size_t send_buffer = 256 * 1024;
  // Streams open at once, both directions together.
  uint32_t max_streams = 1024;
  // Pings that measure the round trip (the first goes out at once).
  std::chrono::milliseconds ping_every{5000};
  // A window also doubles when its credit is due again within this, however short the
  // measured round trip: on a short path the round trip the pings see is less than a
  // credit's own turn through both sides' threads, and a window that never grew would
  // cap the stream at a window per turn.
  std::chrono::milliseconds min_grow_interval{10};
};

// What happened, for the application (Session::TakeEvents).
struct Event {
  enum class Kind {
    kIncoming,  // the peer opened a stream: `data` is its target; Accept or Refuse it
    kAccepted,  // our open was accepted: writes now go out
    kRefused,   // our open was refused: `code`, `data` the reason; the stream is gone
    kReadable,  // bytes arrived where none were waiting: Read them
    kWritable,  // the send buffer has room again after a Write took less than offered
    kFinished,  // the peer sends no more: once Read has returned what is left, that is all
    kReset,     // the peer reset the stream: `code`, `data` the reason; the stream is gone
    kClosed,    // the stream is done in both directions (after FINs and reads) and gone
  };
  Kind kind;
  uint32_t stream = 0;
  Code code = Code::kCancelled;
  std::string data;
};

// A received frame that still points into its message (mux.cc).
struct FrameView;

class Session {
 public:
  // The side that dials (gpunexd) opens odd stream ids, the other side even ones.
  enum class Role { kInitiator, kResponder };

  Session(Role role, Options options, TimePoint now);

  // A message of the peer. An error is a protocol violation: the connection should be
  // closed (after sending what NextMessage still gives: a go-away saying why).
  Status Receive(std::string message, TimePoint now);
  // The next message to send, or nullopt while there is nothing that may go.
  std::optional<std::string> NextMessage(TimePoint now);
  // Whether NextMessage has something (cheap).
  bool WantsToSend() const;

  // The events since the last call, oldest first.
  std::vector<Event> TakeEvents();

  // Opens a stream to `target` (at most kMaxTargetBytes); its id. kResourceExhausted
  // when the session's stream or memory cap is reached, kFailedPrecondition after a
  // go-away (either side's).
  StatusOr<uint32_t> Open(std::string_view target);
  // Accepts or refuses a stream of an kIncoming event.
  Status Accept(uint32_t stream);
  Status Refuse(uint32_t stream, Code code, std::string_view reason);

  // Takes up to data.size() bytes for the stream, as many as its send buffer has room
  // for (0 when full: a kWritable event follows when room frees). kFailedPrecondition
  // after Finish or when the stream is gone.
  StatusOr<size_t> Write(uint32_t stream, std::string_view data);
  // No more writes: a FIN follows the bytes still waiting.
  Status Finish(uint32_t stream);
  // Up to `max` received bytes (fewer when fewer wait; empty when none), which returns
  // their credit to the peer.
  StatusOr<std::string> Read(uint32_t stream, size_t max, TimePoint now);
  // Reading without a copy: the oldest received bytes not read yet, as they lie in the
  // session (empty when none wait; valid until the next call on the session), and
  // Consume, which reads the first `n` of them (at most what Peek gave), as Read does.
  std::string_view Peek(uint32_t stream) const;
  Status Consume(uint32_t stream, size_t n, TimePoint now);
  // Ends the stream in both directions now: bytes waiting either way are dropped.
  void Reset(uint32_t stream, Code code, std::string_view reason);
  // Opens nothing more and refuses what the peer opens; streams open go on.
  void GoAway(Code code, std::string_view reason);

  // Figures, for metrics and tests.
  size_t open_streams() const { return streams_.size(); }
  // Received bytes held for readers, over all streams.
  uint64_t buffered_received() const { return buffered_received_; }
  // Bytes waiting to be sent, over all streams.
  uint64_t buffered_to_send() const { return buffered_to_send_; }
  // The sum of the streams' receive windows (at most Options::connection_window).
  uint64_t reserved_window() const { return reserved_window_; }
  // A stream's receive window; 0 when it is gone.
  uint32_t receive_window(uint32_t stream) const;
  // The smoothed round trip; zero until the first pong.
  std::chrono::nanoseconds round_trip() const { return srtt_; }
  bool going_away() const { return sent_go_away_ || received_go_away_; }

 private:
  enum class Phase { kOpening, kIncoming, kOpen };
  struct Stream {
    Phase phase = Phase::kOpen;
    // Receiving.
    // Received data frames as they came (the bytes after each one's header), and where
    // the unread bytes of the first begin.
    std::deque<std::string> received;
    size_t received_at = 0;
    uint64_t received_bytes = 0;  // not read yet
    uint32_t window = 0;          // our receive window for it
    uint64_t credit_given = 0;    // bytes the peer may send in all (sum of credits)
    uint64_t bytes_received = 0;  // bytes the peer sent
    uint64_t credit_pending = 0;  // bytes read whose credit is not returned yet
    TimePoint last_credit{};      // when credit was last returned
    bool fin_received = false;
    // Sending: pieces of at most max_chunk bytes, each after kHeaderBytes of room for its
    // frame's header.
    std::deque<std::string> to_send;
    size_t to_send_bytes = 0;
    uint64_t send_credit = 0;     // bytes we may still send
    bool writer_blocked = false;  // a Write took less than offered: tell kWritable later
    bool fin_wanted = false;      // Finish was called
    bool fin_sent = false;
  };

  Status ReceiveFrame(const FrameView& f, TimePoint now);
  Status ReceiveData(uint32_t stream, std::string message);
  void Queue(Frame f);
  void Emit(Event::Kind kind, uint32_t stream, Code code = Code::kCancelled, std::string data = {});
  void Drop(uint32_t stream);
  void MaybeClose(uint32_t stream);
  bool HasData(const Stream& s) const;
  std::optional<std::string> NextData();
  Status Violation(std::string what);

  Role role_;
  Options options_;
  uint32_t next_id_;
  std::map<uint32_t, Stream> streams_;
  // Streams that may have data to send, in turn order (round robin).
  std::deque<uint32_t> ready_;
  std::set<uint32_t> in_ready_;
  std::deque<std::string> control_;  // encoded control frames, sent before data
  std::vector<Event> events_;
  uint64_t buffered_received_ = 0;
  uint64_t buffered_to_send_ = 0;
  uint64_t reserved_window_ = 0;
  // The round trip.
  TimePoint next_ping_;
  std::optional<std::pair<uint64_t, TimePoint>> ping_out_;
  uint64_t ping_seq_ = 0;
  std::chrono::nanoseconds srtt_{0};
  size_t pongs_due_ = 0;
  bool sent_go_away_ = false;
  bool received_go_away_ = false;
  uint32_t highest_peer_id_ = 0;
};

}  // namespace gpunex::mux

#endif  // GPUNEX_COMMON_MUX_H_
