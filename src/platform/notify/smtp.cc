#include "platform/notify/smtp.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "platform/notify/internal/mail_format.h"

namespace gpunex::platform::notify {
namespace {

void EnsureCurlInitialised() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlEasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct CurlUrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

// The DATA phase reads the message from here.
struct Upload {
  const std::string* data;
  size_t pos = 0;
};

size_t ReadUpload(char* buffer, size_t size, size_t nitems, void* userdata) {
  auto* up = static_cast<Upload*>(userdata);
  size_t n = std::min(size * nitems, up->data->size() - up->pos);
  std::memcpy(buffer, up->data->data() + up->pos, n);
  up->pos += n;
  return n;
}

// Whether a failed transfer was a permanent refusal of this message: a 5xx reply to
// MAIL, RCPT or DATA, or to the end of the data. 530 ("authentication/STARTTLS
// required") is about our configuration, not the message, so it is retried.
bool IsPermanentRefusal(CURLcode rc, long smtp_code) {
  if (smtp_code < 500 || smtp_code > 599 || smtp_code == 530) return false;
  return rc == CURLE_SEND_ERROR || rc == CURLE_WEIRD_SERVER_REPLY;
}

class CurlSmtp final : public SmtpClient {
 public:
  CurlSmtp(std::string url, CurlSmtpOptions options)
      : url_(std::move(url)), options_(std::move(options)) {}

  Status Send(const OutgoingEmail& email) override {
    Status url_ok = ValidateSmtpUrl(url_);
    if (!url_ok.ok()) return Unavailable("SMTP is misconfigured: " + url_ok.message());
    GPUNEX_ASSIGN_OR_RETURN(internal::Mailbox from, internal::ParseMailbox(email.from, "from"));
    GPUNEX_ASSIGN_OR_RETURN(internal::Mailbox to, internal::ParseMailbox(email.to, "to"));
    GPUNEX_ASSIGN_OR_RETURN(std::string message,
                            internal::FormatMessage({.from = email.from,
                                                     .to = email.to,
                                                     .subject = email.subject,
                                                     .body = email.body,
                                                     .message_id = email.message_id,
                                                     .date = email.date}));
    try {
      return Transfer(from.address, to.address, message);
    } catch (const std::exception& e) {  // e.g. std::bad_alloc; curl itself is C
      return Internal(std::string("smtp: ") + e.what());
    }
  }

 private:
  Status Transfer(const std::string& from_addr, const std::string& to_addr,
                  const std::string& message) {
    EnsureCurlInitialised();
    std::unique_ptr<CURL, CurlEasyDeleter> curl(curl_easy_init());
    if (!curl) return Internal("smtp: curl_easy_init failed");
    CURL* c = curl.get();

    std::string envelope_from = "<" + from_addr + ">";
    std::unique_ptr<curl_slist, CurlSlistDeleter> rcpt(
        curl_slist_append(nullptr, ("<" + to_addr + ">").c_str()));
    if (!rcpt) return Internal("smtp: out of memory");
    Upload upload{&message};
    char errbuf[CURL_ERROR_SIZE] = {0};

    curl_easy_setopt(c, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // called from worker threads
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout.count()));
    if (options_.require_tls)
      curl_easy_setopt(c, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
    if (!options_.username.empty()) {
      curl_easy_setopt(c, CURLOPT_USERNAME, options_.username.c_str());
      curl_easy_setopt(c, CURLOPT_PASSWORD, options_.password.c_str());
    }
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, envelope_from.c_str());
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt.get());
    curl_easy_setopt(c, CURLOPT_READFUNCTION, &ReadUpload);
    curl_easy_setopt(c, CURLOPT_READDATA, &upload);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(message.size()));

    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) return Status::Ok();

    long smtp_code = 0;  // the last reply, QUIT excepted
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &smtp_code);
    std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    std::string message_text = "smtp: " + detail;
    if (smtp_code > 0 && detail.find(std::to_string(smtp_code)) == std::string::npos) {
      message_text += " (reply " + std::to_string(smtp_code) + ")";
    }
    if (IsPermanentRefusal(rc, smtp_code)) return FailedPrecondition(message_text);
    return Unavailable(message_text);
  }

  const std::string url_;
  const CurlSmtpOptions options_;
};

}  // namespace

Status ValidateSmtpUrl(std::string_view url) {
  EnsureCurlInitialised();
  std::unique_ptr<CURLU, CurlUrlDeleter> u(curl_url());
  if (!u) return Internal("out of memory");
  std::string s(url);
  if (curl_url_set(u.get(), CURLUPART_URL, s.c_str(), 0) != CURLUE_OK) {
    return InvalidArgument("the SMTP URL is not a valid URL");
  }
  auto part = [&](CURLUPart which) -> std::string {
    char* p = nullptr;
    if (curl_url_get(u.get(), which, &p, 0) != CURLUE_OK || p == nullptr) return "";
    std::string out(p);
    curl_free(p);
    return out;
  };
  std::string scheme = part(CURLUPART_SCHEME);
  if (scheme != "smtp" && scheme != "smtps") {
    return InvalidArgument("the SMTP URL must start with smtp:// or smtps://");
  }
  if (part(CURLUPART_HOST).empty()) return InvalidArgument("the SMTP URL has no host");
  if (!part(CURLUPART_QUERY).empty() || !part(CURLUPART_FRAGMENT).empty()) {
    return InvalidArgument("the SMTP URL must not have a query or fragment");
  }
  return Status::Ok();
}

std::unique_ptr<SmtpClient> CurlSmtpClient(std::string smtp_url, CurlSmtpOptions options) {
  EnsureCurlInitialised();
  return std::make_unique<CurlSmtp>(std::move(smtp_url), std::move(options));
}

}  // namespace gpunex::platform::notify
