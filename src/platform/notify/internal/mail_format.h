// Private to platform/notify: parsing of mailboxes and the RFC 5322 / MIME formatting
// of a plain-text UTF-8 message. No I/O.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time.h"

namespace gpunex::platform::notify::internal {

// "Name <local@domain>" or "local@domain", split.
struct Mailbox {
  std::string display_name;  // UTF-8, unquoted; "" when none
  std::string address;       // "local@domain", ASCII
};

// Whether `s` contains CR or LF (a header injection attempt when in a header value).
bool HasLineBreak(std::string_view s);

// Parses one mailbox. Fails with kInvalidArgument naming `what` ("to", "from") when it
// holds CR/LF or other control characters, or is not a single address of the form
// local@domain (ASCII dot-atom local part, LDH domain labels), optionally behind a
// display name.
StatusOr<Mailbox> ParseMailbox(std::string_view s, std::string_view what);

// The mailbox as a header value: the display name quoted or RFC 2047-encoded as needed.
std::string FormatMailbox(const Mailbox& m);

// An unstructured header value (Subject): as is when printable ASCII that fits a line,
// otherwise RFC 2047 "=?UTF-8?B?...?=" words of at most 75 characters, folded with
// CRLF SP. Never splits a UTF-8 sequence across words.
std::string EncodeUnstructured(std::string_view value, size_t header_name_length);

// "Sun, 29 Nov 2026 16:00:00 +0000": UTC, to the second (the fraction is dropped).
std::string FormatRfc5322Date(Timestamp t);

// Converts '\n', '\r\n' and lone '\r' line ends to CRLF.
std::string ToCrlf(std::string_view text);

// Quoted-printable (RFC 2045 §6.7) of CRLF-separated text: lines of at most 76
// characters, hard line breaks kept as CRLF.
std::string QuotedPrintable(std::string_view crlf_text);

struct MessageParts {
  std::string from;        // mailbox
  std::string to;          // mailbox
  std::string subject;     // UTF-8, one line
  std::string body;        // UTF-8 text
  std::string message_id;  // "<id@domain>"
  Timestamp date;          // the Date header
};

// The complete message (headers, blank line, body; CRLF line ends) ready for the SMTP
// DATA phase (before dot-stuffing). The body is sent as 7bit when it is ASCII with
// short lines, otherwise as quoted-printable. Fails with kInvalidArgument on header
// injection or malformed fields.
StatusOr<std::string> FormatMessage(const MessageParts& parts);

}  // namespace gpunex::platform::notify::internal
