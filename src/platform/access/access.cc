#include "platform/access/access.h"

#include <charconv>

#include "common/ascii.h"
#include "common/ids.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::access {

namespace {

constexpr std::string_view kRentalPrefix = "rnt_";
constexpr size_t kIdChars = 26;

// A port number of 1 to 65535 written plainly ("8080"), or 0.
int PortNumber(std::string_view s) {
  int port = 0;
  if (s.empty() || s.size() > 5 || s[0] == '0') return 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || end != s.data() + s.size() || port < 1 || port > 65535) return 0;
  return port;
}

bool IsIdChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

}  // namespace

std::string HostLabel(std::string_view rental_id, int port) {
  return AsciiLower(rental_id.starts_with(kRentalPrefix) ? rental_id.substr(kRentalPrefix.size())
                                                         : rental_id) +
         "-" + std::to_string(port);
}

std::optional<PortAddress> PortOfHost(std::string_view host, std::string_view domain) {
  if (domain.empty()) return std::nullopt;
  // Without the port: "a-1.localhost:8081", not "[::1]:8081" (no label there).
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host.size() <= domain.size() + 1 || host[host.size() - domain.size() - 1] != '.') {
    return std::nullopt;
  }
  if (AsciiLower(host.substr(host.size() - domain.size())) != AsciiLower(domain)) {
    return std::nullopt;
  }
  const std::string_view label = host.substr(0, host.size() - domain.size() - 1);
  const size_t dash = label.find('-');
  if (dash != kIdChars) return std::nullopt;
  const int port = PortNumber(label.substr(dash + 1));
  if (port == 0) return std::nullopt;
  std::string id(kRentalPrefix);
  for (char c : label.substr(0, dash)) {
    if (!IsIdChar(c)) return std::nullopt;
    id += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return PortAddress{std::move(id), port, ""};
}

std::optional<PortAddress> PortOfPath(std::string_view target) {
  constexpr std::string_view kStart = "/r/";
  if (!target.starts_with(kStart)) return std::nullopt;
  std::string_view rest = target.substr(kStart.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view id = rest.substr(0, slash);
  if (!id.starts_with(kRentalPrefix) || id.size() != kRentalPrefix.size() + kIdChars) {
    return std::nullopt;
  }
  for (char c : id.substr(kRentalPrefix.size())) {
    if (!IsIdChar(c)) return std::nullopt;
  }
  rest = rest.substr(slash + 1);
  const size_t end = rest.find_first_of("/?");
  const int port = PortNumber(rest.substr(0, end));
  if (port == 0) return std::nullopt;
  const size_t prefix_size =
      kStart.size() + id.size() + 1 + (end == std::string_view::npos ? rest.size() : end);
  return PortAddress{std::string(id), port, std::string(target.substr(0, prefix_size))};
}

Access::Access(store::Database& db, AccessOptions options)
    : db_(db), options_(std::move(options)), public_url_(options_.public_url) {}

void Access::Bound(const std::string& public_url) {
  MutexLock lock(&mu_);
  if (options_.public_url.empty()) public_url_ = public_url;
}

std::optional<PortUrls> Access::UrlsOf(const std::string& rental_id, int port) const {
  std::string base;
  {
    MutexLock lock(&mu_);
    base = public_url_;
  }
  if (options_.listen.empty() || base.empty()) return std::nullopt;
  while (!base.empty() && base.back() == '/') base.pop_back();
  // The host name form keeps the public URL's scheme and port.
  const size_t scheme_end = base.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "http" : base.substr(0, scheme_end);
  const std::string authority =
      scheme_end == std::string::npos ? base : base.substr(scheme_end + 3);
  std::string port_part;
  if (const size_t colon = authority.rfind(':');
      colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    port_part = authority.substr(colon);
  }
  return PortUrls{
      .host_url =
          scheme + "://" + HostLabel(rental_id, port) + "." + options_.domain + port_part + "/",
      .path_url = base + "/r/" + rental_id + "/" + std::to_string(port) + "/",
  };
}

StatusOr<NewAccessToken> Access::CreateToken(const rentals::Rental& r,
                                             std::optional<std::chrono::seconds> ttl) {
  const std::chrono::seconds life = ttl.value_or(options_.token_ttl);
  if (life < std::chrono::seconds(60) || life > options_.max_token_ttl) {
    return FieldError("ttl_s", "must be from 60 to " +
                                   std::to_string(options_.max_token_ttl.count()) + " seconds");
  }
  if (rentals::HasEnded(r)) return FailedPrecondition("the rental has ended");
  const Timestamp now = options_.clock->Now();
  NewAccessToken out;
  out.secret = NewSecret(kTokenPrefix);
  out.token = AccessToken{.id = NewId("atk"),
                          .rental_id = r.id,
                          .customer_id = r.customer_id,
                          .created_at = now,
                          .expires_at = now + life,
                          .revoked_at = std::nullopt};
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    AccessStore tokens(tx);
    GPUNEX_ASSIGN_OR_RETURN(const int64_t live, tokens.CountLive(r.id, now));
    if (live >= options_.max_tokens_per_rental) {
      return FailedPrecondition("the rental holds " +
                                std::to_string(options_.max_tokens_per_rental) +
                                " live access tokens: revoke one first");
    }
    return tokens.Insert(out.token, Sha256Hex(out.secret));
  }));
  return out;
}

StatusOr<std::vector<AccessToken>> Access::ListTokens(const std::string& rental_id) {
  std::vector<AccessToken> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, AccessStore(tx).OfRental(rental_id));
    return Status::Ok();
  }));
  return out;
}

Status Access::RevokeToken(const std::string& rental_id, const std::string& token_id) {
  return db_.Transact([&](store::Tx& tx) -> Status {
    AccessStore tokens(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<AccessToken> token, tokens.Find(rental_id, token_id));
    if (!token) return NotFound("the rental has no access token " + token_id);
    return tokens.Revoke(token_id, options_.clock->Now());
  });
}

StatusOr<AccessToken> Access::CheckToken(std::string_view secret) {
  if (!secret.starts_with(kTokenPrefix) || secret.size() > 128) {
    return Unauthenticated("not an access token");
  }
  std::optional<AccessToken> found;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(found, AccessStore(tx).ByHash(Sha256Hex(secret)));
    return Status::Ok();
  }));
  if (!found || found->revoked_at || found->expires_at <= options_.clock->Now()) {
    return Unauthenticated("the access token is unknown, expired or revoked");
  }
  return *found;
}

}  // namespace gpunex::platform::access
