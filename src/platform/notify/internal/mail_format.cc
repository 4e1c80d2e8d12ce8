#include "platform/notify/internal/mail_format.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "common/json.h"

namespace gpunex::platform::notify::internal {
namespace {

constexpr size_t kMaxLocalPartLength = 64;
constexpr size_t kMaxDomainLength = 253;
constexpr size_t kMaxLineLength = 998;  // RFC 5322 §2.1.1, without CRLF
constexpr size_t kFoldLength = 78;      // RFC 5322 §2.1.1 "SHOULD"
// Bytes of UTF-8 per encoded word: 39 bytes -> 52 base64 characters -> a 64-character
// word, which fits a 78-character line even after "Subject: ".
constexpr size_t kEncodedWordBytes = 39;

// RFC 5322 atext: letters, digits and these.
bool IsAtext(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-/=?^_`{|}~").find(c) != std::string_view::npos;
}

bool IsPrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

bool ValidLocalPart(std::string_view s) {
  if (s.empty() || s.size() > kMaxLocalPartLength) return false;
  if (s.front() == '.' || s.back() == '.') return false;
  char prev = 0;
  for (char c : s) {
    if (c == '.') {
      if (prev == '.') return false;
    } else if (!IsAtext(c)) {
      return false;
    }
    prev = c;
  }
  return true;
}

bool ValidDomain(std::string_view s) {
  if (s.empty() || s.size() > kMaxDomainLength) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
      if (!ok) return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// RFC 2047 B-encoded words for `value`, folded with CRLF SP between words.
std::string EncodedWords(std::string_view value) {
  std::string out;
  size_t i = 0;
  while (i < value.size()) {
    size_t n = std::min(kEncodedWordBytes, value.size() - i);
    // Back off so that a multi-byte UTF-8 sequence is not split.
    while (i + n < value.size() && n > 1 &&
           (static_cast<unsigned char>(value[i + n]) & 0xC0) == 0x80) {
      --n;
    }
    if (!out.empty()) out += "\r\n ";
    out += "=?UTF-8?B?";
    out += Base64(value.substr(i, n));
    out += "?=";
    i += n;
  }
  return out;
}

bool IsPhraseAtom(std::string_view s) {
  for (char c : s) {
    if (!IsAtext(c) && c != ' ') return false;
  }
  return true;
}

}  // namespace

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != s.npos; }

StatusOr<Mailbox> ParseMailbox(std::string_view s, std::string_view what) {
  const std::string name(what);
  if (HasLineBreak(s)) return InvalidArgument(name + " must not contain line breaks");
  if (!IsCleanText(s, /*multiline=*/false)) {
    return InvalidArgument(name + " must be text without control characters");
  }
  if (s.size() > kMaxLocalPartLength + kMaxDomainLength + 256) {
    return InvalidArgument(name + " is too long");
  }
  Mailbox m;
  std::string_view addr = Trim(s);
  size_t lt = addr.find('<');
  if (lt != std::string_view::npos) {
    if (addr.back() != '>') return InvalidArgument(name + " is not a valid email address");
    std::string_view display = Trim(addr.substr(0, lt));
    if (display.size() >= 2 && display.front() == '"' && display.back() == '"') {
      display = display.substr(1, display.size() - 2);
    }
    if (display.find_first_of("\"\\<>") != std::string_view::npos) {
      return InvalidArgument(name + " has an invalid display name");
    }
    m.display_name = std::string(display);
    addr = addr.substr(lt + 1, addr.size() - lt - 2);
  }
  size_t at = addr.rfind('@');
  if (at == std::string_view::npos || !ValidLocalPart(addr.substr(0, at)) ||
      !ValidDomain(addr.substr(at + 1))) {
    return InvalidArgument(name + " is not a valid email address");
  }
  m.address = std::string(addr);
  return m;
}

std::string FormatMailbox(const Mailbox& m) {
  if (m.display_name.empty()) return m.address;
  std::string display;
  if (!IsPrintableAscii(m.display_name)) {
    display = EncodedWords(m.display_name);
  } else if (IsPhraseAtom(m.display_name)) {
    display = m.display_name;
  } else {
    display = "\"" + m.display_name + "\"";  // ParseMailbox rejected '"' and '\'
  }
  return display + " <" + m.address + ">";
}

std::string EncodeUnstructured(std::string_view value, size_t header_name_length) {
  // "=?" in a plain value could be mistaken for an encoded word, so it is encoded too.
  if (IsPrintableAscii(value) && value.find("=?") == value.npos &&
      header_name_length + 2 + value.size() <= kFoldLength) {
    return std::string(value);
  }
  return EncodedWords(value);
}

std::string FormatRfc5322Date(Timestamp t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t secs = static_cast<std::time_t>(
      std::chrono::floor<std::chrono::seconds>(t).time_since_epoch().count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d +0000", kDays[tm.tm_wday % 7],
                tm.tm_mday, kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

std::string ToCrlf(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 32);
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\r') {
      out += "\r\n";
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else if (c == '\n') {
      out += "\r\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string QuotedPrintable(std::string_view crlf_text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  constexpr size_t kMaxQpLine = 76;
  std::string out;
  out.reserve(crlf_text.size() * 3 / 2);
  size_t start = 0;
  while (start <= crlf_text.size()) {
    size_t end = crlf_text.find("\r\n", start);
    bool last = end == std::string_view::npos;
    std::string_view line = crlf_text.substr(start, last ? crlf_text.npos : end - start);
    size_t line_len = 0;  // characters on the current output line
    for (size_t i = 0; i < line.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(line[i]);
      bool at_end = i + 1 == line.size();
      std::string piece;
      if ((c >= 33 && c <= 126 && c != '=') || ((c == ' ' || c == '\t') && !at_end)) {
        piece.assign(1, static_cast<char>(c));
      } else {
        piece = {'=', kHex[c >> 4], kHex[c & 15]};
      }
      // A soft break ("=") must fit on the line too, unless this is the line's end.
      size_t room = at_end ? kMaxQpLine : kMaxQpLine - 1;
      if (line_len + piece.size() > room) {
        out += "=\r\n";
        line_len = 0;
      }
      out += piece;
      line_len += piece.size();
    }
    if (last) break;
    out += "\r\n";
    start = end + 2;
  }
  return out;
}

StatusOr<std::string> FormatMessage(const MessageParts& parts) {
  GPUNEX_ASSIGN_OR_RETURN(Mailbox from, ParseMailbox(parts.from, "from"));
  GPUNEX_ASSIGN_OR_RETURN(Mailbox to, ParseMailbox(parts.to, "to"));
  if (HasLineBreak(parts.subject)) return InvalidArgument("subject must not contain line breaks");
  if (!IsCleanText(parts.subject, /*multiline=*/false)) {
    return InvalidArgument("subject must be UTF-8 text without control characters");
  }
  const std::string& mid = parts.message_id;
  if (mid.size() < 5 || mid.size() > 250 || mid.front() != '<' || mid.back() != '>' ||
      mid.find('@') == mid.npos || !IsPrintableAscii(mid) || mid.find(' ') != mid.npos) {
    return InvalidArgument("message_id must look like <id@domain>");
  }
  if (!IsCleanText(parts.body, /*multiline=*/true)) {
    return InvalidArgument("body must be UTF-8 text without control characters");
  }

  std::string body = ToCrlf(parts.body);
  if (body.size() < 2 || body.compare(body.size() - 2, 2, "\r\n") != 0) body += "\r\n";
  bool seven_bit = true;
  size_t line_start = 0;
  for (size_t i = 0; i < body.size() && seven_bit; ++i) {
    if (static_cast<unsigned char>(body[i]) >= 0x80) seven_bit = false;
    if (body[i] == '\r') {
      if (i - line_start > kMaxLineLength) seven_bit = false;
      line_start = i + 2;
    }
  }

  std::string msg;
  msg.reserve(body.size() + 512);
  auto header = [&msg](std::string_view name, std::string_view value) {
    msg.append(name).append(": ").append(value).append("\r\n");
  };
  header("Date", FormatRfc5322Date(parts.date));
  header("From", FormatMailbox(from));
  header("To", FormatMailbox(to));
  header("Subject", EncodeUnstructured(parts.subject, 7));
  header("Message-ID", mid);
  header("MIME-Version", "1.0");
  header("Content-Type", "text/plain; charset=utf-8");
  header("Content-Transfer-Encoding", seven_bit ? "7bit" : "quoted-printable");
  header("Auto-Submitted", "auto-generated");  // RFC 3834: no auto-replies, please
  msg += "\r\n";
  if (seven_bit) {
    msg += body;
  } else {
    msg += QuotedPrintable(body);
  }
  return msg;
}

}  // namespace gpunex::platform::notify::internal
