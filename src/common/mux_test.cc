#include "common/mux.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace gpunex::mux {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

const TimePoint kStart{};

// --------------------------------------------------------------------------- frames

TEST(MuxFrame, EveryTypeRoundTrips) {
  const std::vector<Frame> frames = {
      MakeFrame(FrameType::kOpen, 1, R"({"port":8080})"),
      MakeFrame(FrameType::kAccept, 1),
      MakeFrame(FrameType::kRefuse, 3, "port 22 is not declared", Code::kRefused),
      MakeFrame(FrameType::kData, 0xFFFFFFFF, std::string(kMaxDataBytes, 'x')),
      WindowFrame(5, kMaxWindow),
      MakeFrame(FrameType::kFin, 7),
      MakeFrame(FrameType::kReset, 9, "", Code::kGone),
      MakeFrame(FrameType::kPing, 0, "12345678"),
      MakeFrame(FrameType::kPong, 0, "87654321"),
      MakeFrame(FrameType::kGoAway, 0, "restarting", Code::kShutdown),
  };
  for (const Frame& f : frames) {
    const std::string m = Encode(f);
    auto back = Decode(m);
    ASSERT_TRUE(back.ok()) << kFrameTypeNames.Name(f.type) << ": " << back.status().message();
    EXPECT_EQ(*back, f) << kFrameTypeNames.Name(f.type);
  }
}

TEST(MuxFrame, TheHeaderIsAsDocumented) {
  // docs/agent-protocol.md, "The data channel": a window frame of 65536 on stream 3.
  const std::string m = Encode(WindowFrame(3, 65536));
  EXPECT_EQ(m, std::string("\x05\x00\x00\x00\x00\x00\x00\x03\x00\x01\x00\x00", 12));
}

TEST(MuxFrame, BadFramesSayWhatIsWrong) {
  auto err = [](std::string m) {
    auto f = Decode(m);
    return f.ok() ? std::string("decoded") : std::string(f.status().message());
  };
  const auto header = [](uint8_t type, uint32_t stream) {
    return std::string{static_cast<char>(type),
                       0,
                       0,
                       0,
                       static_cast<char>(stream >> 24),
                       static_cast<char>(stream >> 16),
                       static_cast<char>(stream >> 8),
                       static_cast<char>(stream)};
  };
  EXPECT_EQ(err(std::string("\x04\x00\x00", 3)),
            "a frame of 3 bytes is shorter than its 8-byte header");
  EXPECT_EQ(err(header(11, 1) + "x"), "unknown frame type 11");
  EXPECT_EQ(err(header(0, 1) + "x"), "unknown frame type 0");
  std::string flagged = header(4, 1) + "x";
  flagged[1] = 1;
  EXPECT_EQ(err(flagged), "data frame: flags and reserved bytes must be 0");
  EXPECT_EQ(err(header(4, 0) + "x"), "data frame on stream 0");
  EXPECT_EQ(err(header(8, 1) + "12345678"), "ping frame on a stream");
  EXPECT_EQ(err(header(4, 1)), "data frame: carries 1 to 65536 bytes");
  EXPECT_EQ(err(header(4, 1) + std::string(kMaxDataBytes + 1, 'x')),
            "data frame: carries 1 to 65536 bytes");
  EXPECT_EQ(err(header(1, 1)), "open frame: the target must be 1 to 4096 bytes");
  EXPECT_EQ(err(header(2, 1) + "x"), "accept frame: carries no payload");
  EXPECT_EQ(err(header(5, 1) + std::string(4, '\0')),
            "window frame: the increment must be 1 to 1073741824");
  EXPECT_EQ(err(header(5, 1) + "abc"), "window frame: the increment is 4 bytes");
  EXPECT_EQ(err(header(7, 1) + std::string("\x00\x09", 2)), "reset frame: unknown code 9");
  EXPECT_EQ(err(header(7, 1) + "\x00"), "reset frame: no code");
  EXPECT_EQ(err(header(3, 1) + std::string("\x00\x02\xff", 3)),
            "refuse frame: the reason must be UTF-8 of at most 1024 bytes");
  EXPECT_EQ(err(header(9, 0) + "1234567"), "pong frame: carries 8 bytes");
}

// Random messages never crash the decoder, and what decodes encodes back to the same bytes.
TEST(MuxFrame, RandomMessagesDecodeOrFailCleanly) {
  std::mt19937 rng(20261206);
  int decoded = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string m(std::uniform_int_distribution<size_t>(0, 24)(rng), '\0');
    for (char& c : m) c = static_cast<char>(rng());
    // Mostly plausible headers, so that the payload rules are reached too.
    if (m.size() >= 8 && rng() % 4 != 0) {
      m[0] = static_cast<char>(1 + rng() % 10);
      m[1] = m[2] = m[3] = 0;
      if (rng() % 2) m[4] = m[5] = m[6] = 0;
    }
    auto f = Decode(m);
    if (f.ok()) {
      ++decoded;
      EXPECT_EQ(Encode(*f), m);
    }
  }
  EXPECT_GT(decoded, 1000);
}

// --------------------------------------------------------------------------- a session pair

// Two sessions joined directly (no delay), each message delivered as soon as it is made.
struct Pair {
  explicit Pair(Options for_a = {}) : a(Session::Role::kInitiator, for_a, kStart) {}

  Session a;
  Session b{Session::Role::kResponder, Options{}, kStart};
  TimePoint now = kStart;

  // Moves messages both ways until neither side has any; the first protocol error.
  Status Flush() {
    for (bool moved = true; moved;) {
      moved = false;
      while (auto m = a.NextMessage(now)) {
        GPUNEX_RETURN_IF_ERROR(b.Receive(*m, now));
        moved = true;
      }
      while (auto m = b.NextMessage(now)) {
        GPUNEX_RETURN_IF_ERROR(a.Receive(*m, now));
        moved = true;
      }
    }
    return Status::Ok();
  }
};

std::vector<Event::Kind> Kinds(const std::vector<Event>& events) {
  std::vector<Event::Kind> out;
  for (const auto& e : events) out.push_back(e.kind);
  return out;
}

using K = Event::Kind;

TEST(MuxSession, OpenWriteFinishReadClose) {
  Pair p;
  auto id = p.a.Open("port 8080");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 1u);
  // Writes before the accept wait for it.
  ASSERT_EQ(*p.a.Write(*id, "hello"), 5u);
  ASSERT_TRUE(p.a.Finish(*id).ok());
  ASSERT_TRUE(p.Flush().ok());
  auto in = p.b.TakeEvents();
  ASSERT_EQ(Kinds(in), std::vector<K>{K::kIncoming});
  EXPECT_EQ(in[0].data, "port 8080");
  EXPECT_EQ(in[0].stream, 1u);
  EXPECT_FALSE(p.b.Write(1, "early").ok());  // not accepted yet
  ASSERT_TRUE(p.b.Accept(1).ok());
  ASSERT_TRUE(p.Flush().ok());
  EXPECT_EQ(Kinds(p.a.TakeEvents()), std::vector<K>{K::kAccepted});
  EXPECT_EQ(Kinds(p.b.TakeEvents()), (std::vector<K>{K::kReadable, K::kFinished}));
  EXPECT_EQ(*p.b.Read(1, 3, p.now), "hel");
  EXPECT_EQ(*p.b.Read(1, 100, p.now), "lo");
  EXPECT_EQ(*p.b.Read(1, 100, p.now), "");
  EXPECT_FALSE(p.a.Write(1, "more").ok());  // after Finish
  ASSERT_EQ(*p.b.Write(1, "world"), 5u);
  ASSERT_TRUE(p.b.Finish(1).ok());
  ASSERT_TRUE(p.Flush().ok());
  // b sent its fin after a's: both directions are done on both sides.
  EXPECT_EQ(Kinds(p.b.TakeEvents()), std::vector<K>{K::kClosed});
  EXPECT_EQ(Kinds(p.a.TakeEvents()), (std::vector<K>{K::kReadable, K::kFinished}));
  EXPECT_EQ(p.a.open_streams(), 1u);
  EXPECT_EQ(*p.a.Read(1, 100, p.now), "world");
  EXPECT_EQ(Kinds(p.a.TakeEvents()), std::vector<K>{K::kClosed});
  EXPECT_EQ(p.a.open_streams(), 0u);
  EXPECT_EQ(p.b.open_streams(), 0u);
  EXPECT_EQ(p.a.reserved_window(), 0u);
  EXPECT_EQ(p.b.reserved_window(), 0u);
  // Ids go up by two on each side.
  EXPECT_EQ(*p.a.Open("again"), 3u);
  EXPECT_EQ(*p.b.Open("back"), 2u);
}

TEST(MuxSession, APieceLargerThanTheCreditGoesInTwoFrames) {
  Options big_chunks;
  big_chunks.max_chunk = 20000;  // the initial window (32 KiB) takes one and a part
  Pair p(big_chunks);
  const uint32_t id = *p.a.Open("t");
  ASSERT_TRUE(p.Flush().ok());
  ASSERT_TRUE(p.b.Accept(id).ok());
  std::string sent(45000, '\0');
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 7 + 3);
  ASSERT_EQ(*p.a.Write(id, sent), sent.size());
  ASSERT_TRUE(p.a.Finish(id).ok());
  std::vector<size_t> frames;
  std::string got;
  for (int round = 0; round < 10 && got.size() < sent.size(); ++round) {
    while (auto m = p.a.NextMessage(p.now)) {
      auto f = Decode(*m);
      ASSERT_TRUE(f.ok());
      if (f->type == FrameType::kData) frames.push_back(f->payload.size());
      ASSERT_TRUE(p.b.Receive(*m, p.now).ok());
    }
    got += *p.b.Read(id, 1 << 20, p.now);
    while (auto m = p.b.NextMessage(p.now)) ASSERT_TRUE(p.a.Receive(*m, p.now).ok());
  }
  EXPECT_EQ(got, sent);
  ASSERT_GE(frames.size(), 3u);
  EXPECT_EQ(frames[0], 20000u);
  EXPECT_EQ(frames[1], 32768u - 20000u);  // the rest of the credit: the piece is cut
}

TEST(MuxSession, RefuseAndReset) {
  Pair p;
  const uint32_t id = *p.a.Open("port 22");
  ASSERT_TRUE(p.Flush().ok());
  p.b.TakeEvents();
  ASSERT_TRUE(p.b.Refuse(id, Code::kRefused, "port 22 is not declared").ok());
  ASSERT_TRUE(p.Flush().ok());
  auto ev = p.a.TakeEvents();
  ASSERT_EQ(Kinds(ev), std::vector<K>{K::kRefused});
  EXPECT_EQ(ev[0].code, Code::kRefused);
  EXPECT_EQ(ev[0].data, "port 22 is not declared");
  EXPECT_EQ(p.a.open_streams(), 0u);

  const uint32_t id2 = *p.a.Open("port 8080");
  ASSERT_TRUE(p.Flush().ok());
  p.b.TakeEvents();
  ASSERT_TRUE(p.b.Accept(id2).ok());
  ASSERT_EQ(*p.a.Write(id2, std::string(1000, 'x')), 1000u);
  ASSERT_TRUE(p.Flush().ok());
  p.b.Reset(id2, Code::kGone, "the rental ended");
  EXPECT_EQ(p.b.open_streams(), 0u);
  EXPECT_EQ(p.b.buffered_received(), 0u);
  // Data the peer sends before it hears of the reset is dropped, not an error.
  ASSERT_EQ(*p.a.Write(id2, "late"), 4u);
  ASSERT_TRUE(p.Flush().ok());
  auto ev2 = p.a.TakeEvents();
  ASSERT_EQ(Kinds(ev2), (std::vector<K>{K::kAccepted, K::kReset}));
  EXPECT_EQ(ev2[1].code, Code::kGone);
  EXPECT_EQ(ev2[1].data, "the rental ended");
  EXPECT_EQ(p.a.open_streams(), 0u);
  EXPECT_EQ(p.a.buffered_to_send(), 0u);
}

TEST(MuxSession, GoAwayRefusesNewStreamsAndKeepsOpenOnes) {
  Pair p;
  const uint32_t id = *p.a.Open("x");
  ASSERT_TRUE(p.Flush().ok());
  ASSERT_TRUE(p.b.Accept(id).ok());
  p.b.GoAway(Code::kShutdown, "agent stopping");
  ASSERT_TRUE(p.Flush().ok());
  EXPECT_TRUE(p.a.going_away());
  auto again = p.a.Open("y");
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(*p.a.Write(id, "still"), 5u);
  ASSERT_TRUE(p.Flush().ok());
  EXPECT_EQ(*p.b.Read(id, 10, p.now), "still");
}

TEST(MuxSession, StreamsBeyondTheCapsAreRefused) {
  Options small;
  small.max_streams = 2;
  Session a(Session::Role::kInitiator, small, kStart);
  ASSERT_TRUE(a.Open("1").ok());
  ASSERT_TRUE(a.Open("2").ok());
  EXPECT_EQ(a.Open("3").status().code(), StatusCode::kResourceExhausted);

  // The peer's third open is refused with kLimit, without a stream.
  Session b(Session::Role::kResponder, small, kStart);
  for (uint32_t id : {1u, 3u, 5u}) {
    ASSERT_TRUE(b.Receive(Encode(MakeFrame(FrameType::kOpen, id, "t")), kStart).ok());
  }
  EXPECT_EQ(b.open_streams(), 2u);
  std::vector<Frame> out;
  while (auto m = b.NextMessage(kStart)) out.push_back(*Decode(*m));
  auto refusal = std::find_if(out.begin(), out.end(),
                              [](const Frame& f) { return f.type == FrameType::kRefuse; });
  ASSERT_NE(refusal, out.end());
  EXPECT_EQ(refusal->stream, 5u);
  EXPECT_EQ(refusal->code, Code::kLimit);

  // The memory budget: windows of 32 KiB in a budget of 64 KiB.
  Options tight;
  tight.connection_window = 2 * kInitialWindow;
  Session c(Session::Role::kInitiator, tight, kStart);
  ASSERT_TRUE(c.Open("1").ok());
  ASSERT_TRUE(c.Open("2").ok());
  EXPECT_EQ(c.Open("3").status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.reserved_window(), 2 * kInitialWindow);
}

TEST(MuxSession, ProtocolViolationsEndTheConnectionWithAGoAway) {
  const auto violation = [](std::vector<Frame> frames) {
    Session b(Session::Role::kResponder, Options{}, kStart);
    for (const auto& f : frames) {
      Status s = b.Receive(Encode(f), kStart);
      if (!s.ok()) {
        // The go-away saying why is the last thing b sends.
        std::optional<Frame> last;
        while (auto m = b.NextMessage(kStart)) last = *Decode(*m);
        EXPECT_TRUE(last && last->type == FrameType::kGoAway && last->code == Code::kProtocol);
        return std::string(s.message());
      }
    }
    return std::string("none");
  };
  const Frame open1 = MakeFrame(FrameType::kOpen, 1, "t");
  EXPECT_EQ(violation({MakeFrame(FrameType::kOpen, 2, "t")}),
            "data channel protocol: open of stream 2: not the peer's to open");
  EXPECT_EQ(violation({MakeFrame(FrameType::kOpen, 3, "t"), open1}),
            "data channel protocol: open of stream 1: ids must grow");
  EXPECT_EQ(violation({open1, MakeFrame(FrameType::kData, 1, "x")}),
            "data channel protocol: stream 1: data before the stream opened");
  // Past the window: b accepts, then the peer sends more than 32 KiB.
  {
    Session b(Session::Role::kResponder, Options{}, kStart);
    ASSERT_TRUE(b.Receive(Encode(open1), kStart).ok());
    ASSERT_TRUE(b.Accept(1).ok());
    const Frame full = MakeFrame(FrameType::kData, 1, std::string(kInitialWindow, 'x'));
    ASSERT_TRUE(b.Receive(Encode(full), kStart).ok());
    Status s = b.Receive(Encode(MakeFrame(FrameType::kData, 1, "y")), kStart);
    EXPECT_EQ(s.message(), "data channel protocol: stream 1: data past the receive window");
    EXPECT_EQ(b.buffered_received(), kInitialWindow);
  }
  {
    Session b(Session::Role::kResponder, Options{}, kStart);
    ASSERT_TRUE(b.Receive(Encode(open1), kStart).ok());
    ASSERT_TRUE(b.Accept(1).ok());
    ASSERT_TRUE(b.Receive(Encode(MakeFrame(FrameType::kFin, 1)), kStart).ok());
    EXPECT_EQ(b.Receive(Encode(MakeFrame(FrameType::kFin, 1)), kStart).message(),
              "data channel protocol: stream 1: a second fin");
  }
  {
    Session b(Session::Role::kResponder, Options{}, kStart);
    Status s;
    for (int i = 0; i < 100 && s.ok(); ++i) {
      s = b.Receive(Encode(MakeFrame(FrameType::kPing, 0, "12345678")), kStart);
    }
    EXPECT_EQ(s.message(), "data channel protocol: pings faster than pongs can go");
  }
  {
    Session b(Session::Role::kResponder, Options{}, kStart);
    EXPECT_EQ(b.Receive(std::string("\x04\x00", 2), kStart).message(),
              "data channel protocol: a frame of 2 bytes is shorter than its 8-byte header");
  }
}

TEST(MuxSession, AWriterIsToldWhenItsBufferHasRoomAgain) {
  Options o;
  o.send_buffer = 100 * 1024;
  Pair p(o);
  const uint32_t id = *p.a.Open("t");
  ASSERT_TRUE(p.Flush().ok());
  ASSERT_TRUE(p.b.Accept(id).ok());
  ASSERT_TRUE(p.Flush().ok());
  p.a.TakeEvents();
  EXPECT_EQ(*p.a.Write(id, std::string(300 * 1024, 'x')), 100u * 1024);
  EXPECT_EQ(*p.a.Write(id, "more"), 0u);
  EXPECT_EQ(p.a.buffered_to_send(), 100u * 1024);
  // The peer's 32 KiB window lets a third of it go; nobody reads on b yet.
  ASSERT_TRUE(p.Flush().ok());
  EXPECT_EQ(p.b.buffered_received(), kInitialWindow);
  EXPECT_EQ(p.a.buffered_to_send(), 100u * 1024 - kInitialWindow);
  EXPECT_TRUE(p.a.TakeEvents().empty());
  // b reads; credit flows back and a's buffer drains below half: writable.
  for (int i = 0; i < 10; ++i) {
    while (!p.b.Read(id, 1 << 20, p.now)->empty()) {
    }
    ASSERT_TRUE(p.Flush().ok());
  }
  EXPECT_EQ(p.a.buffered_to_send(), 0u);
  EXPECT_EQ(Kinds(p.a.TakeEvents()), std::vector<K>{K::kWritable});
}

// A random peer that mostly keeps the rules (it tracks its credit from the window frames
// it gets) and now and then breaks one: the session takes its frames or reports the
// violation, and its memory stays within its bounds throughout.
TEST(MuxSession, RandomPeerFramesKeepTheBounds) {
  std::mt19937 rng(7);
  int taken = 0, violations = 0;
  for (int run = 0; run < 300; ++run) {
    Options o;
    o.max_streams = 8;
    o.connection_window = 4 * kInitialWindow;
    Session b(Session::Role::kResponder, o, kStart);
    TimePoint now = kStart;
    uint32_t next_open = 1;
    std::map<uint32_t, uint64_t> credit;  // the peer's view: accepted streams, their credit
    std::set<uint32_t> fin_sent;
    for (int i = 0; i < 400; ++i) {
      now += milliseconds(rng() % 5);
      const uint32_t any =
          credit.empty() ? 1 : std::next(credit.begin(), rng() % credit.size())->first;
      Frame f;
      const int pick = static_cast<int>(rng() % 100);
      if (pick < 2) {  // anything at all
        f = MakeFrame(static_cast<FrameType>(1 + rng() % 10), rng() % 4 ? any : 0,
                      std::string(rng() % 40, 'z'), static_cast<Code>(1 + rng() % 8));
        f.increment = 1 + rng() % 100000;
        if (!Decode(Encode(f)).ok()) continue;
      } else if (pick < 15) {
        f = MakeFrame(FrameType::kOpen, next_open, "t");
        next_open += 2;
      } else if (pick < 65) {
        if (credit.empty() || fin_sent.contains(any) || credit[any] == 0) continue;
        f = MakeFrame(FrameType::kData, any,
                      std::string(1 + rng() % std::min<uint64_t>(credit[any], 20000), 'd'));
        credit[any] -= f.payload.size();
      } else if (pick < 75) {
        f = WindowFrame(any, 1 + rng() % 100000);
      } else if (pick < 80) {
        if (fin_sent.contains(any)) continue;
        f = MakeFrame(FrameType::kFin, any);
        fin_sent.insert(any);
      } else if (pick < 83) {
        f = MakeFrame(FrameType::kReset, any, "", Code::kCancelled);
        credit.erase(any);
      } else {
        f = MakeFrame(FrameType::kPing, 0, "abcdefgh");
      }
      if (!b.Receive(Encode(f), now).ok()) {
        ++violations;
        break;
      }
      ++taken;
      for (const Event& e : b.TakeEvents()) {
        if (e.kind == K::kIncoming) {
          if (rng() % 4) {
            ASSERT_TRUE(b.Accept(e.stream).ok());
            credit[e.stream] = kInitialWindow;
          } else {
            ASSERT_TRUE(b.Refuse(e.stream, Code::kRefused, "no").ok());
          }
        }
        if (e.kind == K::kReset || e.kind == K::kClosed) credit.erase(e.stream);
      }
      if (rng() % 3 == 0 && !credit.empty()) (void)b.Read(any, rng() % 50000, now);
      if (rng() % 4 == 0 && !credit.empty()) (void)b.Write(any, std::string(rng() % 5000, 'w'));
      while (rng() % 4) {
        auto m = b.NextMessage(now);
        if (!m) break;
        const Frame out = *Decode(*m);
        if (out.type == FrameType::kWindow && credit.contains(out.stream)) {
          credit[out.stream] += out.increment;
        }
      }
      ASSERT_LE(b.open_streams(), o.max_streams);
      ASSERT_LE(b.reserved_window(), o.connection_window);
      ASSERT_LE(b.buffered_received(), b.reserved_window());
      ASSERT_LE(b.buffered_to_send(), o.max_streams * o.send_buffer);
    }
  }
  // Busy sessions, most runs to their end, and the rules were broken now and then.
  EXPECT_GT(taken, 300 * 100) << taken;
  EXPECT_GT(violations, 10) << violations;
}

// --------------------------------------------------------------------------- a simulated link

// A link of `bytes_per_s` each way with `one_way` delay, carrying the messages of two
// sessions: each side sends one message at a time, as fast as the link serialises them.
// The applications: `a` opens streams and writes each its bytes, then finishes; `b`
// accepts, reads (except from streams it is told to stall), and when a stream ends
// writes back the FNV-1a hash of what it read and finishes.
class LinkSim {
 public:
  struct Plan {
    double bytes_per_s;
    nanoseconds one_way;
    Options options;
  };
  struct Result {
    double seconds = 0;                  // until the last stream closed on a
    std::map<uint32_t, double> done_at;  // each stream's close on a, in seconds
    bool hashes_match = true;
    uint64_t max_buffered_b = 0;  // received bytes b held at once, at most
    uint64_t max_window = 0;      // the largest receive window on b
  };

  LinkSim(double bytes_per_s, nanoseconds one_way, Options options = {})
      : plan_{bytes_per_s, one_way, options},
        a_(Session::Role::kInitiator, options, kStart),
        b_(Session::Role::kResponder, options, kStart) {}

  // A stream of `bytes` pseudo-random bytes; `stall_s` > 0: b reads nothing of it until
  // that many seconds have passed (forever: a very large value).
  uint32_t AddStream(uint64_t bytes, double stall_s = 0) {
    const uint32_t id = *a_.Open("sink");
    Out& o = out_[id];
    o.total = bytes;
    if (stall_s > 0)
      stall_until_[id] =
          kStart + std::chrono::duration_cast<nanoseconds>(std::chrono::duration<double>(stall_s));
    Pump(id);
    return id;
  }

  // Runs until every stream but the stalled ones closed on a, or `limit_s` passed.
  Result Run(double limit_s) {
    const TimePoint limit =
        kStart + std::chrono::duration_cast<nanoseconds>(std::chrono::duration<double>(limit_s));
    Result r;
    while (now_ < limit) {
      Send(a_, ab_);
      Send(b_, ba_);
      HandleEvents(r);
      Deliver(ab_, b_, r);
      Deliver(ba_, a_, r);
      ReadStalledOnesDue();
      HandleEvents(r);
      r.max_buffered_b = std::max(r.max_buffered_b, b_.buffered_received());
      if (out_.size() <= 16) {
        for (const auto& [id, o] : out_) {
          r.max_window = std::max<uint64_t>(r.max_window, b_.receive_window(id));
        }
      }
      if (Finished()) break;
      // The next moment something happens.
      TimePoint next = limit;
      for (Dir* d : {&ab_, &ba_}) {
        if (!d->flight.empty()) next = std::min(next, d->flight.front().first);
      }
      if (a_.WantsToSend()) next = std::min(next, std::max(ab_.free_at, now_ + nanoseconds(1)));
      if (b_.WantsToSend()) next = std::min(next, std::max(ba_.free_at, now_ + nanoseconds(1)));
      for (const auto& [id, t] : stall_until_) {
        if (t > now_) next = std::min(next, t);
      }
      now_ = std::max(next, now_ + nanoseconds(1));
    }
    r.seconds = Seconds(now_);
    r.done_at = done_at_;
    r.hashes_match = hashes_match_;
    return r;
  }

  const Session& b() const { return b_; }

 private:
  struct Dir {
    TimePoint free_at = kStart;
    std::deque<std::pair<TimePoint, std::string>> flight;
  };
  struct Out {
    uint64_t total = 0, written = 0;
    uint64_t hash = 14695981039346656037ull;
    std::string reply;
    bool finished = false;
    bool closed = false;
  };
  struct In {
    uint64_t hash = 14695981039346656037ull;
    bool finished = false;
    bool replied = false;
  };

  static double Seconds(TimePoint t) { return std::chrono::duration<double>(t - kStart).count(); }
  static void Fnv(uint64_t* h, std::string_view s) {
    for (unsigned char c : s) *h = (*h ^ c) * 1099511628211ull;
  }

  void Send(Session& s, Dir& d) {
    while (d.free_at <= now_) {
      auto m = s.NextMessage(now_);
      if (!m) return;
      const auto tx = std::chrono::duration_cast<nanoseconds>(
          std::chrono::duration<double>(static_cast<double>(m->size() + 6) / plan_.bytes_per_s));
      d.free_at = std::max(d.free_at, now_) + tx;
      d.flight.emplace_back(d.free_at + plan_.one_way, std::move(*m));
    }
  }

  void Deliver(Dir& d, Session& to, Result& r) {
    while (!d.flight.empty() && d.flight.front().first <= now_) {
      Status s = to.Receive(d.flight.front().second, now_);
      ASSERT_TRUE(s.ok()) << s.message();
      d.flight.pop_front();
      HandleEvents(r);
    }
  }

  // The stream's bytes 8 * `word` to 8 * `word` + 7: the same whenever they are made
  // again (a Write that took part of a chunk).
  static uint64_t WordAt(uint32_t id, uint64_t word) {
    uint64_t x = (uint64_t{id} << 40) ^ word ^ 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }

  void Pump(uint32_t id) {
    Out& o = out_[id];
    while (o.written < o.total) {
      std::string chunk(std::min<uint64_t>(o.total - o.written, 64 * 1024), '\0');
      uint64_t word = 0;
      for (size_t i = 0; i < chunk.size(); ++i) {
        const uint64_t pos = o.written + i;
        if (i == 0 || pos % 8 == 0) word = WordAt(id, pos / 8);
        chunk[i] = static_cast<char>(word >> (8 * (pos % 8)));
      }
      const size_t n = *a_.Write(id, chunk);
      Fnv(&o.hash, std::string_view(chunk).substr(0, n));
      o.written += n;
      if (n < chunk.size()) return;  // kWritable follows
    }
    if (!o.finished) {
      o.finished = true;
      ASSERT_TRUE(a_.Finish(id).ok());
    }
  }

  void HandleEvents(Result& r) {
    for (bool again = true; again;) {
      again = false;
      for (const Event& e : a_.TakeEvents()) {
        again = true;
        OnA(e, r);
      }
      for (const Event& e : b_.TakeEvents()) {
        again = true;
        OnB(e);
      }
    }
  }

  void OnA(const Event& e, Result&) {
    Out& o = out_[e.stream];
    switch (e.kind) {
      case K::kAccepted:
      case K::kWritable:
        Pump(e.stream);
        break;
      case K::kReadable:
      case K::kFinished:
        while (true) {
          auto got = a_.Read(e.stream, 1 << 20, now_);
          if (!got.ok() || got->empty()) break;
          o.reply += *got;
        }
        break;
      case K::kClosed:
        o.closed = true;
        done_at_[e.stream] = Seconds(now_);
        if (o.reply != std::to_string(o.hash)) hashes_match_ = false;
        break;
      default:
        ADD_FAILURE() << "a: unexpected event on stream " << e.stream;
    }
  }

  void OnB(const Event& e) {
    switch (e.kind) {
      case K::kIncoming:
        ASSERT_TRUE(b_.Accept(e.stream).ok());
        break;
      case K::kReadable:
      case K::kFinished:
        if (e.kind == K::kFinished) in_[e.stream].finished = true;
        ReadB(e.stream);
        break;
      case K::kClosed:
        break;
      default:
        ADD_FAILURE() << "b: unexpected event on stream " << e.stream;
    }
  }

  void ReadB(uint32_t id) {
    auto stall = stall_until_.find(id);
    if (stall != stall_until_.end() && now_ < stall->second) return;
    In& in = in_[id];
    while (true) {
      auto got = b_.Read(id, 1 << 20, now_);
      if (!got.ok() || got->empty()) break;
      Fnv(&in.hash, *got);
    }
    if (in.finished && !in.replied) {
      in.replied = true;
      ASSERT_EQ(*b_.Write(id, std::to_string(in.hash)), std::to_string(in.hash).size());
      ASSERT_TRUE(b_.Finish(id).ok());
    }
  }

  void ReadStalledOnesDue() {
    for (auto it = stall_until_.begin(); it != stall_until_.end();) {
      if (now_ >= it->second) {
        const uint32_t id = it->first;
        it = stall_until_.erase(it);
        ReadB(id);
      } else {
        ++it;
      }
    }
  }

  bool Finished() const {
    for (const auto& [id, o] : out_) {
      if (!o.closed && !stall_until_.contains(id)) return false;
    }
    return true;
  }

  Plan plan_;
  Session a_, b_;
  TimePoint now_ = kStart;
  Dir ab_, ba_;
  std::map<uint32_t, Out> out_;
  std::map<uint32_t, In> in_;
  std::map<uint32_t, TimePoint> stall_until_;
  std::map<uint32_t, double> done_at_;
  bool hashes_match_ = true;
};

// 64 MiB over 25 MB/s with a 50 ms round trip: the window grows from 32 KiB past the
// path's 1.25 MB bandwidth-delay product, so the stream gets most of the link (a fixed
// 256 KiB window would give it 5 MB/s).
TEST(MuxLink, OneStreamFillsALongFatPipe) {
  LinkSim sim(25e6, milliseconds(25));
  sim.AddStream(64ull << 20);
  auto r = sim.Run(60);
  ASSERT_EQ(r.done_at.size(), 1u);
  EXPECT_TRUE(r.hashes_match);
  const double goodput = static_cast<double>(64ull << 20) / r.seconds;
  EXPECT_GT(goodput, 0.85 * 25e6) << "took " << r.seconds << " s";
  EXPECT_GE(r.max_window, 1'250'000u);
  EXPECT_LE(r.max_window, Options{}.max_stream_window);
  EXPECT_LE(r.max_buffered_b, Options{}.max_stream_window);
}

// A thousand streams at once, each checked end to end.
TEST(MuxLink, AThousandStreamsArriveExactly) {
  LinkSim sim(200e6, milliseconds(1));
  for (int i = 0; i < 1000; ++i) sim.AddStream(20'000 + 997 * (i % 50));
  auto r = sim.Run(60);
  EXPECT_EQ(r.done_at.size(), 1000u);
  EXPECT_TRUE(r.hashes_match);
  EXPECT_EQ(sim.b().open_streams(), 0u);
}

// One reader that reads nothing: the other streams finish as fast as without it, and the
// stalled one holds no more than its window.
TEST(MuxLink, AStalledReaderStallsNobodyElse) {
  const auto run = [](bool with_stalled) {
    LinkSim sim(50e6, milliseconds(5));
    if (with_stalled) sim.AddStream(64ull << 20, /*stall_s=*/1e6);
    for (int i = 0; i < 8; ++i) sim.AddStream(4ull << 20);
    return sim.Run(60);
  };
  const auto base = run(false);
  const auto stalled = run(true);
  ASSERT_EQ(base.done_at.size(), 8u);
  ASSERT_EQ(stalled.done_at.size(), 8u);
  EXPECT_TRUE(base.hashes_match && stalled.hashes_match);
  EXPECT_LT(stalled.seconds, base.seconds * 1.1)
      << "with a stalled reader " << stalled.seconds << " s, without " << base.seconds << " s";
  // The stalled stream's bytes on b: its first window, never grown (nobody read it).
  EXPECT_LE(stalled.max_buffered_b, base.max_buffered_b + kInitialWindow);
}

}  // namespace
}  // namespace gpunex::mux
