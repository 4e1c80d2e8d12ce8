#include "common/exec_stream.h"

#include "common/json.h"

namespace gpunex {

std::string EncodeExecFrame(ExecChannel channel, std::string_view payload) {
  std::string out;
  out.reserve(kExecFrameHeaderBytes + payload.size());
  out.push_back(static_cast<char>(channel));
  const auto n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xFF));
  out.append(payload);
  return out;
}

bool IsExecChannel(uint8_t b) { return b <= 4 || b == 255; }

StatusOr<std::optional<ExecFrame>> ExecFrameReader::Next() {
  const std::string_view rest = std::string_view(buffer_).substr(at_);
  if (rest.size() < kExecFrameHeaderBytes) return std::optional<ExecFrame>();
  const auto channel = static_cast<uint8_t>(rest[0]);
  if (!IsExecChannel(channel)) {
    return InvalidArgument("an exec frame of unknown channel " + std::to_string(channel));
  }
  uint32_t n = 0;
  for (size_t i = 1; i < kExecFrameHeaderBytes; ++i) {
    n = (n << 8) | static_cast<unsigned char>(rest[i]);
  }
  if (n > kMaxExecFrameBytes) {
    return InvalidArgument("an exec frame of " + std::to_string(n) + " bytes (at most " +
                           std::to_string(kMaxExecFrameBytes) + ")");
  }
  if (rest.size() < kExecFrameHeaderBytes + n) return std::optional<ExecFrame>();
  ExecFrame f{static_cast<ExecChannel>(channel),
              std::string(rest.substr(kExecFrameHeaderBytes, n))};
  at_ += kExecFrameHeaderBytes + n;
  // What was taken goes once it is most of the buffer, so that appends stay cheap.
  if (at_ * 2 >= buffer_.size()) {
    buffer_.erase(0, at_);
    at_ = 0;
  }
  return std::optional<ExecFrame>(std::move(f));
}

StatusOr<TerminalSize> ParseTerminalSize(std::string_view payload) {
  auto parsed = ParseJson(payload);
  if (!parsed.ok() || !parsed->is_object()) {
    return InvalidArgument("a terminal size is a JSON object {\"Width\":..,\"Height\":..}");
  }
  FieldErrors errors;
  JsonReader r(parsed->get_object(), "", &errors);
  TerminalSize size;
  if (auto w = r.Int("Width", true, 1, 10000)) size.columns = static_cast<uint16_t>(*w);
  if (auto h = r.Int("Height", true, 1, 10000)) size.rows = static_cast<uint16_t>(*h);
  if (!errors.empty()) {
    return InvalidArgument("terminal size: " + errors.begin()->first + " " +
                           errors.begin()->second);
  }
  return size;
}

}  // namespace gpunex
