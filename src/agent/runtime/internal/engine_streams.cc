#include "agent/runtime/internal/engine_streams.h"

#include <algorithm>
#include <cstring>

#include "common/json.h"

namespace gpunex::agent::internal {
namespace {

std::string StringField(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return "";
  return std::string(it->value().get_string());
}

}  // namespace

Status LineSplitter::Feed(std::string_view data,
                          const std::function<Status(std::string_view)>& on_line) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(data);
      if (pending_.size() > kMaxStreamLineBytes) {
        return ResourceExhausted("docker: a progress line is longer than 1 MiB");
      }
      return Status::Ok();
    }
    pending_.append(data.substr(0, nl));
    data.remove_prefix(nl + 1);
    std::string line = std::move(pending_);
    pending_.clear();
    if (!line.empty()) GPUNEX_RETURN_IF_ERROR(on_line(line));
  }
  return Status::Ok();
}

Status ProgressStream::Feed(std::string_view data) {
  return lines_.Feed(data, [this](std::string_view line) { return Line(line); });
}

Status ProgressStream::Finish() {
  if (!lines_.pending().empty()) GPUNEX_RETURN_IF_ERROR(Line(lines_.pending()));
  return Status::Ok();
}

Status ProgressStream::Line(std::string_view line) {
  auto v = ParseJson(line);
  if (!v.ok() || !v->is_object()) return Status::Ok();  // not ours to judge
  const json::object& o = v->get_object();
  if (o.contains("error") || o.contains("errorDetail")) {
    std::string message;
    if (auto it = o.find("errorDetail"); it != o.end() && it->value().is_object()) {
      message = StringField(it->value().get_object(), "message");
    }
    if (message.empty()) message = StringField(o, "error");
    if (message.empty()) message = "unspecified error";
    if (!error_) error_ = message;
    return Status::Ok();
  }
  if (!progress_) return Status::Ok();
  std::string text = StringField(o, "status");
  if (text.empty()) text = StringField(o, "stream");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::string id = StringField(o, "id");
  if (!id.empty()) text = id + ": " + text;
  std::string bar = StringField(o, "progress");
  if (!bar.empty()) text += " " + bar;
  if (!text.empty()) progress_(text);
  return Status::Ok();
}

Status FrameDemuxer::Feed(std::string_view data, const Sink& on_data) {
  while (!data.empty()) {
    if (remaining_ == 0) {
      size_t take = std::min(data.size(), sizeof header_ - header_len_);
      std::memcpy(header_ + header_len_, data.data(), take);
      header_len_ += take;
      data.remove_prefix(take);
      if (header_len_ < sizeof header_) return Status::Ok();
      header_len_ = 0;
      switch (header_[0]) {
        case 0:
        case 1:
          stream_ = LogFrame::Stream::kStdout;
          break;
        case 2:
        case 3:
          stream_ = LogFrame::Stream::kStderr;
          break;
        default:
          return Internal(
              "docker: the log stream is not multiplexed (was the container created with a TTY?)");
      }
      remaining_ = (uint32_t{header_[4]} << 24) | (uint32_t{header_[5]} << 16) |
                   (uint32_t{header_[6]} << 8) | uint32_t{header_[7]};
      first_ = true;
      continue;
    }
    size_t take = std::min<size_t>(data.size(), remaining_);
    GPUNEX_RETURN_IF_ERROR(on_data(stream_, data.substr(0, take), first_));
    first_ = false;
    remaining_ -= static_cast<uint32_t>(take);
    data.remove_prefix(take);
  }
  return Status::Ok();
}

void FrameKey::Add(std::string_view data) {
  size += data.size();
  for (char c : data) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
}

Status StampedFrames::Piece(LogFrame::Stream s, std::string_view piece, bool first) {
  if (first) {
    EndFrame();
    in_stamp_ = true;
    current_ = FrameKey{};
    current_.stream = s;
    if (!on_frame_) collected_.push_back({FrameKey{}, LogFrame{s, ""}});
  }
  if (in_stamp_) {
    size_t sp = piece.find(' ');
    current_.stamp.append(piece.substr(0, sp));
    // RFC 3339 with nanoseconds is 30 characters; anything much longer is not one.
    if (current_.stamp.size() > 64) return Internal("docker: a log frame has no timestamp");
    if (sp == std::string_view::npos) return Status::Ok();
    piece.remove_prefix(sp + 1);
    in_stamp_ = false;
  }
  if (piece.empty()) return Status::Ok();
  current_.Add(piece);
  if (on_frame_) {
    (*on_frame_)(LogFrame{s, std::string(piece)});
  } else {
    collected_.back().second.data.append(piece);
  }
  return Status::Ok();
}

void StampedFrames::EndFrame() {
  if (current_.stamp.empty()) return;
  if (on_frame_) {
    recent_.push_back(current_);
    if (recent_.size() > kFollowOverlap) recent_.pop_front();
  } else {
    collected_.back().first = current_;
  }
  current_ = FrameKey{};
}

size_t DeliveredOverlap(const std::vector<std::pair<FrameKey, LogFrame>>& window,
                        const std::deque<FrameKey>& delivered) {
  for (size_t n = std::min(window.size(), delivered.size()); n > 0; --n) {
    bool match = true;
    for (size_t i = 0; match && i < n; ++i) {
      match = window[i].first == delivered[delivered.size() - n + i];
    }
    if (match) return n;
  }
  return 0;
}

}  // namespace gpunex::agent::internal
