// SmtpClient: hands one email to an SMTP server (the configured relay), which then
// delivers it. OutboxSender (outbox.h) calls it for each outbox row; tests can wrap it
// to inject faults.
//
// Thread-safety: implementations allow concurrent Send calls.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time.h"

namespace gpunex::platform::notify {

struct OutgoingEmail {
  std::string from;        // "GPUnex <noreply@gpunex.example>" or a bare address
  std::string to;          // one recipient, same forms
  std::string subject;     // UTF-8, one line
  std::string body;        // UTF-8 plain text
  std::string message_id;  // "<id@domain>", the same for every attempt at one message
  Timestamp date;          // the Date header
};

class SmtpClient {
 public:
  virtual ~SmtpClient() = default;

  // Sends `email` and returns OK once the server has accepted it for delivery.
  // Failure codes tell the caller whether to try again:
  //   kInvalidArgument     the message is malformed (CR/LF in a header value, a bad
  //                        address, a body that is not UTF-8): never retry;
  //   kFailedPrecondition  the server refused this message permanently (5xx): never
  //                        retry;
  //   kUnavailable         anything that may pass (connection refused or lost,
  //                        timeout, TLS failure, a 4xx reply, authentication
  //                        refused): retry later.
  // A failure after the server accepted the data (a lost final reply) is reported as
  // kUnavailable, so a retry may deliver the message twice: delivery is at least once,
  // and the stable Message-ID identifies the repeat.
  virtual Status Send(const OutgoingEmail& email) = 0;
};

struct CurlSmtpOptions {
  // Requires STARTTLS on an smtp:// URL (the send fails when the server does not offer
  // it). smtps:// URLs always use TLS. Without either, the session is plain text,
  // credentials included; use plain only for a relay on the same host or network.
  bool require_tls = false;
  // PEM file of CA certificates to verify the server with; "" for the system store.
  // The server's certificate is always verified, host name included.
  std::string ca_file;
  // Credentials when they are not in the URL ("smtp://user:password@host").
  std::string username;
  std::string password;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{60'000};  // one whole Send
};

// Checks an SMTP URL: "smtp://" or "smtps://", a host, optionally user:password@, a
// port, and a path naming the EHLO domain. Fails with kInvalidArgument saying what is
// wrong (never echoing the password).
Status ValidateSmtpUrl(std::string_view url);

// A client that sends through libcurl to `smtp_url` (see ValidateSmtpUrl; Send fails
// with kUnavailable while the URL is invalid, so messages wait for a corrected
// configuration rather than fail). Each Send uses its own connection.
std::unique_ptr<SmtpClient> CurlSmtpClient(std::string smtp_url, CurlSmtpOptions options = {});

}  // namespace gpunex::platform::notify
